// The internal API's queries and bodies in /openapi.json are the JSON Schema of the zod schemas the routes check
// with, not a second statement of their rules; where zod metadata carries a rule (the pause reason's pattern),
// Ajv and zod accept exactly the same values.
import { orderingStatusQuery } from '../../../application/ordering/ordering-status';
import { orderingKeyRequest } from '../../../application/ordering/ordering-operator';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import type { z } from 'zod';
import { limitRequest, MAX_PAUSE_REASON, pauseRequest } from '../../../application/partner/partner-operator';
import { erasureRequest } from '../../../application/personal-data/erasure';
import { auditQuery } from '../../../application/access/audit-log';
import { bulkRedeliveryBody, listQuery, redeliveryQuery } from '../../../application/webhooks/webhook-filter';
import { openApiDocument } from '../../../api/openapi/document';
import { zodJsonSchema } from '../../../api/openapi/zod-json-schema';
import { deref, documentSchemas, type Doc } from '../../support/openapi';

/** Every input of an internal operation that a zod schema checks, by `<operationId> <query|body>`. */
const CHECKED: Record<string, z.ZodType> = {
  'listWebhooks query': listQuery,
  'redeliverWebhook query': redeliveryQuery,
  'redeliverWebhooks body': bulkRedeliveryBody,
  'getOrdering query': orderingStatusQuery,
  'skipOrderingKey body': orderingKeyRequest,
  'retryOrderingKey body': orderingKeyRequest,
  'pausePartner body': pauseRequest,
  'limitPartner body': limitRequest,
  'requestErasure body': erasureRequest,
  'listAuditEvents query': auditQuery,
};
/** The one other input: the ingestion body, generated from the ingestion zod schemas by the webhook catalog. */
const INGESTION = 'startWebhook body';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** As served: /openapi.json is this document, serialised. */
const doc: Doc = JSON.parse(JSON.stringify(openApiDocument({ API_VERSIONS: ['v1'], SCIM_BEARER_TOKEN: undefined })));

/** Each internal operation's query (its query parameters folded back into one object schema) and body schema. */
function internalInputs(): Map<string, Record<string, unknown>> {
  const inputs = new Map<string, Record<string, unknown>>();
  for (const [route, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    if (!route.startsWith('/internal/')) continue;
    for (const method of METHODS.filter((m) => item[m])) {
      const operation = item[method];
      const query = [...(item.parameters ?? []), ...(operation.parameters ?? [])].filter((p: any) => p.in === 'query');
      if (query.length > 0) {
        const properties = Object.fromEntries(
          query.map((p: any) => [p.name, { ...p.schema, ...(p.description && { description: p.description }) }]),
        );
        inputs.set(`${operation.operationId} query`, {
          properties,
          required: query.filter((p: any) => p.required).map((p: any) => p.name),
        });
      }
      const body = operation.requestBody?.content?.['application/json']?.schema;
      if (body)
        inputs.set(
          `${operation.operationId} body`,
          body.$ref === '#/components/schemas/WebhookEvent' ? body : deref(doc, body),
        );
    }
  }
  return inputs;
}

describe('internal API schemas in /openapi.json', () => {
  it('every query and body an internal operation checks with zod is that zod schema, generated', () => {
    const inputs = internalInputs();
    assert.deepEqual([...inputs.keys()].sort(), [...Object.keys(CHECKED), INGESTION].sort());
    assert.deepEqual(inputs.get(INGESTION), { $ref: '#/components/schemas/WebhookEvent' });
    for (const [input, schema] of Object.entries(CHECKED)) {
      const generated = zodJsonSchema(schema);
      if (input.endsWith(' body')) {
        assert.deepEqual(inputs.get(input), generated, input);
      } else {
        const { properties, required } = inputs.get(input) as { properties: object; required: string[] };
        assert.deepEqual(properties, generated.properties, input);
        assert.deepEqual(required, (generated.required as string[] | undefined) ?? [], input);
      }
    }
  });

  it('the internal paths (every module of api/openapi/internal/) state no input rule by hand', () => {
    const folder = path.join(__dirname, '..', '..', '..', 'api', 'openapi', 'internal');
    const files = readdirSync(folder).filter((file) => file.endsWith('.ts'));
    assert.ok(files.length >= 5, 'the probe reads every module of the internal paths');
    for (const file of files)
      assert.deepEqual(
        readFileSync(path.join(folder, file), 'utf8').match(
          /\b(pattern|minLength|maxLength|default|queryParameter)\b/g,
        ),
        null,
        file,
      );
  });

  it('a pause reason passes the document exactly when it passes zod: trimmed, 1 to 500 code points, no NUL', () => {
    const reasonValid = documentSchemas(doc)('#/components/schemas/PartnerPause');
    const agree = (reason: string) => {
      const byZod = pauseRequest.safeParse({ reason }).success;
      assert.equal(
        reasonValid({ reason }),
        byZod,
        `${JSON.stringify([...reason].slice(0, 20).join(''))}… (${[...reason].length} code points): zod ${byZod}`,
      );
      return byZod;
    };
    // White space String.prototype.trim removes, one it keeps (U+180E), and a character of two UTF-16 units;
    // around the length limit, sometimes with one NUL somewhere.
    const space = fc.constantFrom(' ', '\t', '\n', '\u00a0', '\u2028', '\u3000', '\ufeff');
    const char = fc.oneof(space, fc.constantFrom('a', 'é', '\u180e', '😀'));
    const withNul = (chars: string[]) =>
      fc
        .option(fc.nat(chars.length), { nil: undefined })
        .map((at) => (at === undefined ? chars : [...chars.slice(0, at), '\u0000', ...chars.slice(at)]));
    const reason = fc
      .tuple(
        fc.array(space, { maxLength: 3 }),
        fc.integer({ min: MAX_PAUSE_REASON - 3, max: MAX_PAUSE_REASON + 2 }),
        fc.array(space, { maxLength: 3 }),
      )
      .chain(([before, length, after]) =>
        fc.array(char, { minLength: length, maxLength: length }).map((core) => [...before, ...core, ...after]),
      )
      .chain(withNul)
      .map((chars) => chars.join(''));
    const short = fc
      .array(char, { maxLength: 6 })
      .chain(withNul)
      .map((chars) => chars.join(''));
    fc.assert(
      fc.property(fc.oneof(reason, short), (text) => void agree(text)),
      { numRuns: 500 },
    );
    // Both sides of each boundary, so the property cannot pass by refusing everything.
    const accepted = ['x', ` ${'😀'.repeat(MAX_PAUSE_REASON)}\u3000`, '\u180e', 'a\u2028b'];
    const refused = ['', ' \t\ufeff', `${'😀'.repeat(MAX_PAUSE_REASON)}a`, 'a\u0000b', '\u0000'];
    assert.deepEqual([...accepted, ...refused].map(agree), [...accepted.map(() => true), ...refused.map(() => false)]);
  });

  it('a limit passes the document exactly when it passes zod: a whole number from 1 to 100000, or null', () => {
    const limitValid = documentSchemas(doc)('#/components/schemas/PartnerLimit');
    const bodies = [0, 1, 1.5, 100_000, 100_001, -1, null, '5', true, [5], {}].map((value) => ({
      max_per_second: value,
    }));
    const verdicts = [...bodies, {}, { max_per_second: 5, extra: 1 }].map((body) => [
      limitValid(body),
      limitRequest.safeParse(body).success,
    ]);
    assert.deepEqual(
      verdicts,
      [false, true, false, true, false, false, true, false, false, false, false, false, false].map((ok) => [ok, ok]),
    );
  });
});
