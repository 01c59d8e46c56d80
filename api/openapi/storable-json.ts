// What the service can accept as JSON text, stated as JSON Schema, so the document refuses exactly what the
// service refuses with 400: PostgreSQL text and jsonb cannot hold a NUL character, and the JSON body parser
// (co-body's @hapi/bourne) refuses a key `__proto__` anywhere.
// Lone UTF-16 surrogates and nesting deeper than MAX_JSON_DEPTH are refused too; JSON Schema cannot state
// those, so the descriptions say it.

type JsonSchema = Record<string, unknown>;

/** A string without NUL: the one character PostgreSQL text refuses that a JSON string can carry. */
export const STORABLE_TEXT = '^[^\\u0000]*$';

/** The component every free-form JSON value (settings, custom fields, fields the spec does not name) refers to. */
export const STORABLE_JSON_NAME = 'StorableJson';
const STORABLE_JSON_REF = { $ref: `#/components/schemas/${STORABLE_JSON_NAME}` };

const storableKey = { pattern: STORABLE_TEXT, not: { const: '__proto__' } };

export const storableJson: JsonSchema = {
  description:
    'Any JSON value the service can store: no NUL character in any string or key, and no key `__proto__` (the ' +
    'JSON parser ' +
    'refuses prototype poisoning).',
  anyOf: [
    { type: ['null', 'boolean', 'number'] },
    { type: 'string', pattern: STORABLE_TEXT },
    { type: 'array', items: STORABLE_JSON_REF },
    { type: 'object', additionalProperties: STORABLE_JSON_REF, propertyNames: storableKey },
  ],
};

const isEmptySchema = (value: unknown) =>
  typeof value === 'object' && value !== null && Object.keys(value).length === 0;

/**
 * The schema with those rules added wherever zod's JSON Schema leaves them out: a string without a pattern
 * gets STORABLE_TEXT, every object the key rule, and every "any value" (`{}`) becomes StorableJson.
 */
export function storable(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) out[key] = storableMember(key, value);
  if (
    out.type === 'string' &&
    out.pattern === undefined &&
    out.format === undefined &&
    out.enum === undefined &&
    out.const === undefined
  )
    out.pattern = STORABLE_TEXT;
  if (out.type === 'object') out.propertyNames = { ...(out.propertyNames as JsonSchema | undefined), ...storableKey };
  return out;
}

function storableMember(key: string, value: unknown): unknown {
  if (key === 'additionalProperties' || key === 'items')
    return isEmptySchema(value) ? STORABLE_JSON_REF : storableNode(value);
  if (key === 'properties')
    return Object.fromEntries(
      Object.entries(value as JsonSchema).map(([name, child]) => [
        name,
        isEmptySchema(child) ? STORABLE_JSON_REF : storableNode(child),
      ]),
    );
  if (key === 'anyOf' || key === 'oneOf' || key === 'allOf' || key === 'prefixItems')
    return (value as unknown[]).map(storableNode);
  return value;
}

const storableNode = (value: unknown): unknown =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? storable(value as JsonSchema) : value;
