import type { Knex } from 'knex';
import { v4 as uuidv4 } from 'uuid';
import { z } from 'zod';
import candidateNew from '../../examples/events/candidate-new.json';
import companySignup from '../../examples/events/company-signup.json';
import jobNew from '../../examples/events/job-new.json';
import type { DataAtRest } from '../../lib/at-rest';
import type { Config } from '../../lib/config';
import { InvalidRequestError } from '../../lib/errors';
import { zodPathErrors } from '../../lib/validation';
import type { TemporalGateway } from '../../temporal/gateway';
import { auditedCall, recordFailedAndThrow, type OperatorContext } from '../access/audit';
import type { PartnerApp } from '../access/partner-apps';
import { acceptWebhook, type AcceptedWebhook } from './ingest';
import { prepareWebhook } from './start-webhook';

// A partner's test event (POST /partner/v1/test-events): the catalog's example of a pair (examples/events/, the
// OpenAPI document's webhooks), for one of the app's companies, accepted as ingestion accepts any webhook and
// delivered through the normal path (the delivery workflow, its signature, the cap, its ordering), marked as a
// test in the log. Each call has a fresh `test-…` event id, apart from real webhooks' idempotency keys.

/** The example of each pair a test event can send. */
const EXAMPLES: Readonly<Record<string, { readonly data: object }>> = {
  'company/signup': companySignup,
  'job/new': jobNew,
  'candidate/new': candidateNew,
};

/** The pairs a test event can send, `event_type/action`. */
export const TEST_EVENT_PAIRS = Object.keys(EXAMPLES);

/** The catalog's pairs with their example's data (GET /partner/v1/event-types): what a test event sends. */
export const catalogExamples = () =>
  TEST_EVENT_PAIRS.map((pair) => {
    const [eventType, action] = pair.split('/');
    return { event_type: eventType, action, example: EXAMPLES[pair].data };
  });

const companyField = z
  .string({ message: 'must be a string' })
  .optional()
  .meta({ description: "One of the app's companies; by default the first of them (GET /partner/v1/app)." });

/** Any type and action, so that a pair without an example is refused with the pairs that have one. */
const anyPair = z.strictObject({
  event_type: z.string({ message: 'must be a string' }),
  action: z.string({ message: 'must be a string' }),
  company_id: companyField,
});

/** The body of POST /partner/v1/test-events, one of the pairs with an example; the OpenAPI schema is made from it. */
export const testEventRequest = z.union(
  TEST_EVENT_PAIRS.map((pair) => {
    const [eventType, action] = pair.split('/');
    return z.strictObject({ event_type: z.literal(eventType), action: z.literal(action), company_id: companyField });
  }) as unknown as [z.ZodObject, z.ZodObject, ...z.ZodObject[]],
);

/** The example's data with `companyId` where it names its company (`company_id` or `company.id`). */
function forCompany(data: object, companyId: string): object {
  if ('company_id' in data) return { ...data, company_id: companyId };
  const company = (data as { company?: object }).company;
  return { ...data, company: { ...company, id: companyId } };
}

function refused(path: string, message: string, detail: string) {
  return new InvalidRequestError([{ path, message }], detail);
}

/** The event a test-event request asks for, or the refusal (400) that says what it may ask for. */
function testEventOf(app: PartnerApp, body: unknown) {
  const parsed = anyPair.safeParse(body);
  if (!parsed.success) throw new InvalidRequestError(zodPathErrors(parsed.error));
  const { event_type: eventType, action, company_id: asked } = parsed.data;
  const example = EXAMPLES[`${eventType}/${action}`];
  if (!example) {
    const pairs = TEST_EVENT_PAIRS.join(', ');
    throw refused(
      'event_type',
      `must be one of ${pairs}`,
      `No example of ${eventType}/${action}: send one of ${pairs}.`,
    );
  }
  const companyId = asked ?? app.companyIds[0];
  if (companyId === undefined) throw refused('company_id', 'the app has no company', 'This app has no company.');
  if (!app.companyIds.includes(companyId)) {
    const companies = app.companyIds.join(', ');
    throw refused('company_id', `must be one of ${companies}`, `company_id must be one of this app's: ${companies}.`);
  }
  return {
    companyId,
    event: { event_type: eventType, action, data: forCompany(example.data, companyId), event_id: `test-${uuidv4()}` },
  };
}

/**
 * Accepts a test event of the app's as any webhook is accepted (application/ingestion/ingest.ts), audited as
 * `test_event.send` (an intent first: the start calls Temporal).
 */
export async function sendTestEvent(
  knex: Knex,
  atRest: DataAtRest,
  gateway: TemporalGateway,
  config: Config,
  who: OperatorContext,
  app: PartnerApp,
  body: unknown,
): Promise<AcceptedWebhook> {
  const what = { action: 'test_event.send' as const, target: null };
  let asked;
  try {
    asked = testEventOf(app, body);
  } catch (error) {
    return recordFailedAndThrow(knex, who, what, error);
  }
  const { event, companyId } = asked;
  const webhook = prepareWebhook(event, config.PARTNER_TIMEOUT_MS, config.WEBHOOK_ORDERING);
  const parameters = { event_type: event.event_type, action: event.action, company_id: companyId };
  return auditedCall(knex, who, { ...what, target: webhook.webhookId, parameters }, () =>
    acceptWebhook(knex, atRest, gateway, { ...webhook, input: { ...webhook.input, isTest: true } }),
  );
}
