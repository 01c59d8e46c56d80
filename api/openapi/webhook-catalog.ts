import { z } from 'zod';
import { webhookHeaders } from '../../events/delivery-headers';
import { MAX_COMPANY_ID_LENGTH, SPECIFIED_EVENTS, webhookRequestSchema } from '../../events/envelope';
import { MAX_JSON_DEPTH } from '../../lib/validation';
import { storableJson, STORABLE_JSON_NAME } from './storable-json';
import { zodJsonSchema, type JsonSchema } from './zod-json-schema';

// The webhook catalog (OpenAPI 3.1 `webhooks`) and the ingestion request body, both generated from the zod
// schemas that validate ingestion, so the contract and the service cannot drift apart.

type Pair = keyof typeof SPECIFIED_EVENTS;

const SPEC_SECTION: Record<Pair, string> = { 'company/signup': '2.2', 'job/new': '2.3', 'candidate/new': '2.4' };
const PAIRS = Object.keys(SPECIFIED_EVENTS) as Pair[];

/** `company/signup` → `CompanySignup`: the component names of a pair. */
const pascal = (pair: string) =>
  pair
    .split(/[/_-]/)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');

/** Every optional property, as dotted paths, so the entry's description states which fields may be absent. */
function optionalPaths(schema: JsonSchema, prefix = ''): string[] {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).flatMap(([name, child]) => {
    const path = `${prefix}${name}`;
    const inner = child.type === 'array' ? (child.items as JsonSchema) : child;
    return [
      ...(required.has(name) ? [] : [path]),
      ...optionalPaths(inner, `${path}${child.type === 'array' ? '[]' : ''}.`),
    ];
  });
}

/**
 * One specified pair: the envelope with its constants and typed data, `event_id` and `ordering_key` kept only for
 * ingestion.
 */
function pairSchema(pair: Pair, ingestion: boolean) {
  const [eventType, action] = pair.split('/');
  const schema = webhookRequestSchema.extend({
    event_type: z.literal(eventType),
    action: z.literal(action),
    data: SPECIFIED_EVENTS[pair],
  });
  return zodJsonSchema(ingestion ? schema : schema.omit({ event_id: true, ordering_key: true }));
}

/** `schema` applies to values of `type` only, as a check in code that looks at one type does. */
const whenType = (type: string, schema: JsonSchema) => ({ anyOf: [{ type, ...schema }, { not: { type } }] });

/**
 * Any other event_type/action pair: data is any JSON object. The specified pairs are excluded so that the
 * `oneOf` of the ingestion body does not let `{"event_type":"job","action":"new","data":{}}` through, and the
 * company id length check that ingestion applies to every event is stated as maxLength.
 */
function otherSchema(ingestion: boolean): JsonSchema {
  const schema = zodJsonSchema(
    ingestion ? webhookRequestSchema : webhookRequestSchema.omit({ event_id: true, ordering_key: true }),
  );
  const properties = schema.properties as Record<string, JsonSchema>;
  const companyId = whenType('string', { maxLength: MAX_COMPANY_ID_LENGTH });
  // Still any storable value: the length rule narrows it, it does not replace it.
  const storableAnd = (schema: JsonSchema) => ({
    allOf: [{ $ref: `#/components/schemas/${STORABLE_JSON_NAME}` }, schema],
  });
  properties.data = {
    ...properties.data,
    properties: {
      company_id: storableAnd(companyId),
      company: storableAnd(whenType('object', { properties: { id: companyId } })),
    },
  };
  const specified = PAIRS.map((pair) => {
    const [eventType, action] = pair.split('/');
    return { properties: { event_type: { const: eventType }, action: { const: action } } };
  });
  return { ...schema, not: { anyOf: specified } };
}

const bodyDescription = (pair: Pair, schema: JsonSchema) =>
  `The body of ${pair} (spec 2.1 and ${SPEC_SECTION[pair]}). Every field of the spec's tables is listed. ` +
  'Fields the spec says only the full payload carries are optional: its own shortened samples omit them and ' +
  'the service forwards what the upstream system sent, so a receiver must accept their absence. ' +
  `Optional here: ${optionalPaths(schema).join(', ')}. Objects may carry fields the spec does not name.`;

/** Component schemas: `<Pair>Webhook` (what the partner receives) and `<Pair>Event` (what ingestion accepts). */
export function webhookSchemas(): Record<string, JsonSchema> {
  const entries: Array<[string, JsonSchema]> = PAIRS.flatMap((pair) => {
    const body = pairSchema(pair, false);
    const received: [string, JsonSchema] = [
      `${pascal(pair)}Webhook`,
      { ...body, description: bodyDescription(pair, body) },
    ];
    return [received, [`${pascal(pair)}Event`, pairSchema(pair, true)]];
  });
  entries.push([STORABLE_JSON_NAME, storableJson]);
  entries.push([
    'OtherWebhook',
    {
      ...otherSchema(false),
      description:
        'The envelope (spec 2.1) of every other event_type/action pair; the spec does not describe their data.',
    },
  ]);
  entries.push(['OtherEvent', otherSchema(true)], ['WebhookEvent', ingestionBody()]);
  return Object.fromEntries(entries);
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function ingestionBody(): JsonSchema {
  return {
    description:
      'One event: exactly one of the specified pairs (typed data) or any other pair (data is any JSON object). ' +
      '`event_id` is the idempotency key, generated when absent. `ordering_key` (1 to 256 characters) orders ' +
      'the webhook with the others of its key when WEBHOOK_ORDERING=entity, over the key derived from the data ' +
      '(docs/partners.md). Beyond the schema the service refuses, with 400, ' +
      `text containing NUL or unpaired surrogates and data nested deeper than ${MAX_JSON_DEPTH} levels ` +
      `(PostgreSQL cannot store them), ` +
      'and any object key named `__proto__`: the JSON parser refuses prototype poisoning. The schemas state ' +
      'the NUL and `__proto__` rules.',
    oneOf: [...PAIRS.map((pair) => ref(`${pascal(pair)}Event`)), ref('OtherEvent')],
  };
}

const HEADER_SCHEMAS: Record<string, object> = {
  'accept-encoding': { type: 'string', const: 'gzip, deflate' },
  accept: { type: 'string', const: '*/*' },
  connection: { type: 'string', const: 'keep-alive' },
  'webhook-timestamp': { type: 'string', pattern: '^[0-9]+$' },
};

/** The headers every delivery sends, from the activity's own header builder, plus the optional signature. */
function deliveryHeaders() {
  const sent = webhookHeaders('token', 'id', 0);
  const descriptions: Record<string, string> = {
    'accept-encoding': 'Always `gzip, deflate` (spec 4.1).',
    accept: 'Always `*/*` (spec 4.1).',
    connection: 'Always `keep-alive` (spec 4.1).',
    'user-agent': 'The service and its version.',
    'webhook-id':
      'The webhook id; the same on every attempt and on a redelivery, so a receiver de-duplicates on it ' +
      '(Standard Webhooks).',
    'webhook-timestamp': 'Unix seconds when this attempt started; signed together with webhook-id and the body.',
  };
  // OpenAPI ignores header parameters named Authorization and Content-Type: the security scheme and the
  // request body state those two.
  const parameters = Object.keys(sent)
    .filter((name) => name !== 'authorization' && name !== 'content-type')
    .map((name) => ({
      name,
      in: 'header',
      required: true,
      description: descriptions[name],
      schema: HEADER_SCHEMAS[name] ?? { type: 'string' },
    }));
  parameters.push(
    {
      name: 'webhook-ordering-key',
      in: 'header',
      required: false,
      description:
        "Sent when the webhook is ordered (WEBHOOK_ORDERING=entity): its key, the upstream system's " +
        '`ordering_key` or `company:<id>`, ' +
        "`job:<data.job.id>` or `candidate:<data.candidate.id>`. A key's webhooks arrive in sequence order, " +
        'one at a time. See docs/partners.md.',
      schema: { type: 'string', minLength: 1, maxLength: 256 },
    },
    {
      name: 'webhook-sequence',
      in: 'header',
      required: false,
      description:
        "Sent with webhook-ordering-key: the webhook's place in its key, from 1. A number missing between two " +
        'that arrive is a gap: that ' +
        'webhook failed finally and the key went on (WEBHOOK_ORDERING_ON_FAILURE=skip). A redelivery keeps its ' +
        'original number.',
      schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
    },
  );
  parameters.push({
    name: 'webhook-signature',
    in: 'header',
    required: false,
    description:
      'Sent when PARTNER_SIGNING_SECRETS is set: space-separated `v1,<base64 HMAC-SHA256>` entries over ' +
      '`{webhook-id}.{webhook-timestamp}.{body}`, ' +
      'one per secret during a rotation (Standard Webhooks). See docs/partners.md.',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+=*( v1,[A-Za-z0-9+/]+=*)*$' },
  });
  return parameters;
}

const TRIGGERS: Record<Pair, string> = {
  'company/signup': 'A company signs up to (enables) the partner integration.',
  'job/new': 'A company triggers adding the settings to a job.',
  'candidate/new': 'A company triggers sending a candidate to the partner.',
};

function deliveryOperation(operationId: string, summary: string, description: string, schema: string) {
  return {
    post: {
      operationId,
      summary,
      description:
        `${description} Sent as POST to the partner endpoint with \`Authorization: Bearer ` +
        `<PARTNER_ACCESS_TOKEN>\` and \`Content-Type: application/json\`.`,
      tags: ['webhooks'],
      security: [{ PartnerToken: [] }],
      parameters: deliveryHeaders(),
      requestBody: { required: true, content: { 'application/json': { schema: ref(schema) } } },
      responses: {
        '2XX': { description: 'Delivered. The response body is ignored.' },
        default: {
          description:
            'Any other status (3XX to 6XX; redirects are not followed), a network error or a timeout: the attempt ' +
            'failed and is retried.',
        },
      },
    },
  };
}

/** The OpenAPI 3.1 `webhooks` object: one entry per specified event, plus the envelope of the other pairs. */
export function webhookCatalog() {
  const entries: Array<[string, object]> = PAIRS.map((pair) => [
    pair,
    deliveryOperation(
      `${pair.replace('/', '_')}Webhook`,
      `${pair} (spec ${SPEC_SECTION[pair]})`,
      TRIGGERS[pair],
      `${pascal(pair)}Webhook`,
    ),
  ]);
  entries.push([
    'other',
    deliveryOperation(
      'otherWebhook',
      'Any other event_type/action pair',
      'Events the spec names but does not describe.',
      'OtherWebhook',
    ),
  ]);
  return Object.fromEntries(entries);
}

/** The security scheme of the deliveries: the partner checks this token. */
export const partnerTokenScheme = {
  type: 'http',
  scheme: 'bearer',
  description: 'PARTNER_ACCESS_TOKEN, sent by the service in every delivery; the partner endpoint checks it (spec 5).',
};
