import { z } from 'zod';
import { storable } from './storable-json';

// The one way the OpenAPI document states a rule zod checks: generated from that zod schema, so the contract
// and the service cannot drift apart. What JSON Schema needs and zod cannot derive is zod metadata on the field.

export type JsonSchema = Record<string, unknown>;

/**
 * zod's e-mail check is its pattern, and its URL check the WHATWG parser (stated as URL_PATTERN): neither is the
 * RFC grammar that `format: email` or `format: uri` names, and each accepts values the other refuses.
 */
const FORMATS_CHECKED_BY_PATTERN = new Set(['email', 'uri']);

/**
 * zod → JSON Schema 2020-12 (OpenAPI 3.1's dialect) of what the schema accepts as input; `$schema` dropped since
 * the document sets the dialect. The text and keys PostgreSQL and the JSON parser refuse are excluded
 * (storable), and `format` goes where zod checks with a pattern or a parser of its own rather than that
 * format's RFC grammar.
 */
export function zodJsonSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io: 'input',
    unrepresentable: 'throw',
    override: ({ jsonSchema: node }) => {
      if (typeof node.format === 'string' && FORMATS_CHECKED_BY_PATTERN.has(node.format) && node.pattern)
        delete node.format;
    },
  });
  return storable(rest);
}

/**
 * The query parameters an object schema checks, in its order: each field's schema, its description lifted to the
 * parameter.
 */
export function zodQueryParameters(schema: z.ZodType): JsonSchema[] {
  const object = zodJsonSchema(schema);
  const required = new Set((object.required ?? []) as string[]);
  return Object.entries(object.properties as Record<string, JsonSchema>).map(([name, { description, ...field }]) => ({
    name,
    in: 'query',
    required: required.has(name),
    ...(description !== undefined && { description }),
    schema: field,
  }));
}
