// Values generated from a JSON Schema of the OpenAPI document (schemathesis-style), for contract fuzzing.
// Covers the keywords the document's generated schemas use; whatever a branch cannot express (`not`,
// format and pattern together) is left to the caller, who filters with a real validator.
import fc from 'fast-check';
import { deref, type Doc } from './openapi';

type Schema = Record<string, any>;

const isoDate = fc.date({
  min: new Date('1900-01-01T00:00:00Z'),
  max: new Date('2099-12-31T23:59:59Z'),
  noInvalidDate: true,
});

const FORMATS: Record<string, fc.Arbitrary<string>> = {
  date: isoDate.map((d) => d.toISOString().slice(0, 10)),
  uri: fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true, withFragments: true }),
  email: fc.emailAddress(),
};

/**
 * Any JSON value, but none with a `__proto__` key (fast-check makes them on purpose): the ingestion body's
 * description puts them outside the contract, as the parser refuses prototype poisoning.
 */
const jsonValue = (maxDepth: number) =>
  fc.jsonValue({ maxDepth }).filter((value) => !JSON.stringify(value).includes('"__proto__"'));

/** A few fields a loose object may carry beyond the ones it names. */
const extraFields = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 8 }).map((k) => `x_${k}`),
  jsonValue(2),
  { maxKeys: 2 },
);

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const base =
    schema.format && FORMATS[schema.format]
      ? FORMATS[schema.format]
      : schema.pattern
        ? fc.stringMatching(new RegExp(schema.pattern))
        : fc.string({ maxLength: 20 });
  const pattern = schema.format && schema.pattern ? new RegExp(schema.pattern) : undefined;
  return base.filter(
    (s) =>
      (pattern ? pattern.test(s) : true) &&
      s.length >= (schema.minLength ?? 0) &&
      s.length <= (schema.maxLength ?? Infinity),
  );
}

function objectOf(doc: Doc, schema: Schema): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const record = fc.record(
    Object.fromEntries(Object.entries(properties).map(([name, child]) => [name, schemaArbitrary(doc, child)])),
    { requiredKeys: schema.required ?? [] },
  );
  if (schema.additionalProperties === false) return record;
  return fc.tuple(record, extraFields).map(([named, extra]) => ({ ...extra, ...named }));
}

const byType: Record<string, (doc: Doc, schema: Schema) => fc.Arbitrary<unknown>> = {
  string: (_doc, schema) => stringOf(schema),
  integer: (_doc, schema) =>
    fc.integer({
      min: Math.max(schema.minimum ?? -(2 ** 31), -(2 ** 31)),
      max: Math.min(schema.maximum ?? 2 ** 31, 2 ** 31),
    }),
  number: () => fc.double({ noNaN: true, noDefaultInfinity: true }),
  boolean: () => fc.boolean(),
  null: () => fc.constant(null),
  array: (doc, schema) => fc.array(schemaArbitrary(doc, schema.items ?? {}), { maxLength: 3 }),
  object: objectOf,
};

/** Values meant to satisfy `schema`; `$ref`s resolve inside `doc`. */
export function schemaArbitrary(doc: Doc, node: Schema): fc.Arbitrary<unknown> {
  const schema = deref(doc, node) as Schema;
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const branches = schema.oneOf ?? schema.anyOf;
  if (branches)
    return fc.oneof(
      ...branches.map((branch: Schema) =>
        schemaArbitrary(doc, { ...schema, oneOf: undefined, anyOf: undefined, ...branch }),
      ),
    );
  if (schema.not && !schema.type) return jsonValue(1);
  if (Array.isArray(schema.type))
    return fc.oneof(...schema.type.map((type: string) => schemaArbitrary(doc, { ...schema, type })));
  if (schema.type) return byType[schema.type](doc, schema);
  return jsonValue(2);
}
