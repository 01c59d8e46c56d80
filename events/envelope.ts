import { z } from 'zod';
import { EVENT_ACTIONS, EVENT_TYPES, type EventAction, type EventType } from '../lib/vocabulary';
import { formatJsonPath, unstorableTextErrors, zodPathErrors, type PathError } from '../lib/validation';
import {
  candidateNewDataSchema,
  companySignupDataSchema,
  jobNewDataSchema,
  type CandidateNewData,
  type CompanySignupData,
  type JobNewData,
} from './payloads';
import { jsonObjectField, MAX_COMPANY_ID_LENGTH } from './fields';
import { MAX_ORDERING_KEY_LENGTH } from './ordering-key';

export { companyIdOf } from './company-id';

export { EVENT_ACTIONS, EVENT_TYPES, type EventAction, type EventType };

/** The JSON body of every webhook (spec 2.1); the three specified pairs carry their typed data. */
export type WebhookEnvelope =
  | { event_type: 'company'; action: 'signup'; data: CompanySignupData }
  | { event_type: 'job'; action: 'new'; data: JobNewData }
  | { event_type: 'candidate'; action: 'new'; data: CandidateNewData }
  | { event_type: EventType; action: EventAction; data: Record<string, unknown> };

/** What upstream systems submit: the envelope plus an optional idempotency key and ordering key. */
export type WebhookEventInput = WebhookEnvelope & { event_id?: string; ordering_key?: string };

/** Letters, digits and `._:-`: the event id becomes part of a Temporal workflow id that people read. */
export const eventIdSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
    "must be 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit",
  );

/** What POST /internal/v1/webhooks accepts before the data check; the catalog is generated from it too. */
export const webhookRequestSchema = z.strictObject({
  event_id: eventIdSchema.optional(),
  ordering_key: z
    .string()
    .min(1, { message: `must be 1 to ${MAX_ORDERING_KEY_LENGTH} characters` })
    .max(MAX_ORDERING_KEY_LENGTH, { message: `must be 1 to ${MAX_ORDERING_KEY_LENGTH} characters` })
    .optional(),
  event_type: z.enum(EVENT_TYPES, { message: `must be one of ${EVENT_TYPES.join(', ')}` }),
  action: z.enum(EVENT_ACTIONS, { message: `must be one of ${EVENT_ACTIONS.join(', ')}` }),
  data: jsonObjectField,
});

/**
 * Data schemas of the pairs the spec specifies (2.2 to 2.4); the data of every other pair is any JSON object.
 * The webhook catalog in /openapi.json is generated from these.
 */
export const SPECIFIED_EVENTS = {
  'company/signup': companySignupDataSchema,
  'job/new': jobNewDataSchema,
  'candidate/new': candidateNewDataSchema,
} as const satisfies Readonly<Partial<Record<`${EventType}/${EventAction}`, z.ZodType>>>;
const DATA_SCHEMAS: Readonly<Record<string, z.ZodType>> = SPECIFIED_EVENTS;

export type ParseResult = { success: true; event: WebhookEventInput } | { success: false; errors: PathError[] };

/**
 * Validates a submitted event. Every problem is reported with its JSON path (`data.candidate.status.group`).
 * The returned event is the input itself: unknown fields inside `data` pass through unchanged.
 */
export function parseWebhookEvent(input: unknown): ParseResult {
  const envelope = webhookRequestSchema.safeParse(input, { reportInput: true });
  if (!envelope.success) return { success: false, errors: pathErrors(envelope.error) };
  const dataSchema = DATA_SCHEMAS[`${envelope.data.event_type}/${envelope.data.action}`];
  const data = dataSchema?.safeParse(envelope.data.data, { reportInput: true });
  if (data && !data.success) {
    return { success: false, errors: pathErrors(data.error).map((e) => ({ ...e, path: prefixPath('data', e.path) })) };
  }
  const { event_id, ordering_key, event_type, action } = envelope.data;
  const unstorable = [
    ...unstorableTextErrors(envelope.data.data, ['data']),
    ...companyIdErrors(envelope.data.data),
    ...(ordering_key === undefined ? [] : unstorableTextErrors(ordering_key, ['ordering_key'])),
  ];
  if (unstorable.length) return { success: false, errors: unstorable };
  const event = { event_type, action, data: (input as { data: Record<string, unknown> }).data } as WebhookEventInput;
  if (event_id !== undefined) event.event_id = event_id;
  if (ordering_key !== undefined) event.ordering_key = ordering_key;
  return { success: true, event };
}

export { MAX_COMPANY_ID_LENGTH };

/** The company id of any event (data.company_id or data.company.id) must fit its index and search attribute. */
function companyIdErrors(data: Record<string, unknown>): PathError[] {
  const company = data.company as { id?: unknown } | undefined;
  const candidates: Array<[string, unknown]> = [
    ['data.company_id', data.company_id],
    ['data.company.id', company?.id],
  ];
  return candidates
    .filter(([, id]) => typeof id === 'string' && id.length > MAX_COMPANY_ID_LENGTH)
    .map(([path]) => ({ path, message: `must be at most ${MAX_COMPANY_ID_LENGTH} characters` }));
}

/** A missing field says "required" rather than "expected string, received undefined". */
function pathErrors(error: z.ZodError): PathError[] {
  const missing = new Set(['invalid_type', 'invalid_value', 'invalid_union']);
  const issues = error.issues.map((issue) =>
    missing.has(issue.code) && issue.input === undefined ? { ...issue, message: 'required' } : issue,
  );
  return zodPathErrors(new z.ZodError(issues));
}

function prefixPath(prefix: string, path: string): string {
  if (path === formatJsonPath([])) return prefix;
  return path.startsWith('[') ? `${prefix}${path}` : `${prefix}.${path}`;
}

/** The envelope the partner receives (spec 4.1): exactly event_type, action and data. */
export function toEnvelope(event: WebhookEventInput): WebhookEnvelope {
  return { event_type: event.event_type, action: event.action, data: event.data };
}

/**
 * The exact bytes every attempt POSTs and the store keeps. JSON.stringify of a parsed object is stable, so
 * the event read back from the workflow input or from the row's json text gives the same body again.
 */
export function envelopeBody(event: WebhookEnvelope): string {
  return JSON.stringify(toEnvelope(event));
}
