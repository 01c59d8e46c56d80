import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { z } from 'zod';
import type { Config } from '../../lib/config';
import { dataAtRest } from '../../lib/at-rest';
import {
  EMAIL_ADDRESS_PATTERN,
  NOT_BLANK_PATTERN,
  PHONE_NUMBER_PATTERN,
  SUBJECT_KINDS,
  subjectKey,
  type IndexKeys,
  type SubjectKind,
} from '../../lib/subject-index';
import { indexKeysOf } from '../../store/personal-data/subject-index-keys';
import { isStorableText, unstorableTextIssue, zodPathErrors } from '../../lib/validation';
import {
  forgetUnstartedErasure,
  insertErasure,
  readErasure,
  type ErasureView,
} from '../../store/personal-data/erasures';

import { type TemporalGateway } from '../../temporal/gateway';
import { recordFailedAndThrow, recordIntent, type OperatorContext } from '../access/audit';
import { InvalidRequestError, NotFoundError, TemporalUnavailableError, ErasureNotStartedError } from '../../lib/errors';

// An erasure request, shared by POST /internal/v1/erasures and `partner-service erase`: validated, recorded
// with the subject's HMAC only, and handed to the `eraseSubject` workflow, which does the work.

const text = z
  .string({ message: 'must be a string' })
  .min(1, { message: 'must not be empty', abort: true })
  .refine(isStorableText, unstorableTextIssue);
const companyId = text.optional().meta({ description: "Only this company's webhooks." });
// Each subject's pattern is one the shared normaliser (lib/subject-index.ts) accepts, as ingestion's index does,
// and, as a pattern, it is stated in /openapi.json.
const SUBJECT_FIELDS = {
  candidate_id: text
    .regex(NOT_BLANK_PATTERN, { message: 'must not be blank' })
    .meta({ description: "The candidate's id, as `data.candidate.id` carries it." }),
  email: text.regex(EMAIL_ADDRESS_PATTERN, { message: 'must be an e-mail address' }).meta({
    description:
      "An e-mail address anywhere in a body: the candidate's, a request author's, or inside a message, an " +
      'answer or a custom field (compared without case; any script).',
  }),
  phone: text
    .regex(PHONE_NUMBER_PATTERN, {
      message:
        'must be a phone number: digits with its country code (+44 20 7946 0000), spaces and + - . ( ) / allowed',
    })
    .meta({
      description:
        "The candidate's phone number, as `data.candidate.phone_number` carries it; compared by its digits, with " +
        'the country code.',
    }),
} as const;

/**
 * The body of an erasure request: one subject (a candidate's id, an e-mail address or a phone number), and optionally a
 * company.
 */
export const erasureRequest = z.union([
  z.strictObject({ candidate_id: SUBJECT_FIELDS.candidate_id, company_id: companyId }),
  z.strictObject({ email: SUBJECT_FIELDS.email, company_id: companyId }),
  z.strictObject({ phone: SUBJECT_FIELDS.phone, company_id: companyId }),
]);

export type ErasureRequest = z.infer<typeof erasureRequest>;

/** The subject of a valid request. Several subjects or none is one error at the root; otherwise zod's per field. */
export function parseErasureRequest(body: unknown): { kind: SubjectKind; value: string; companyId: string | null } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidRequestError([{ path: '(root)', message: 'must be an object with candidate_id, email or phone' }]);
  }
  const given = SUBJECT_KINDS.filter((field) => Object.hasOwn(body, field));
  if (given.length !== 1) {
    throw new InvalidRequestError([
      {
        path: '(root)',
        message: given.length
          ? 'give one of candidate_id, email or phone, not several'
          : 'give candidate_id, email or phone',
      },
    ]);
  }
  const [kind] = given;
  // The branch of the subject given (the union's in SUBJECT_KINDS order) says what is wrong: the union's own issue
  // names no field.
  const parsed = erasureRequest.options[SUBJECT_KINDS.indexOf(kind)].safeParse(body);
  if (!parsed.success) throw new InvalidRequestError(zodPathErrors(parsed.error));
  const request = parsed.data as Record<string, string | undefined>;
  return { kind, value: request[kind]!, companyId: request.company_id ?? null };
}

/**
 * Records the request (the subject's HMAC under every index key in use, never the subject) and its audit intent
 * in one transaction, then starts its workflow, acting for the operator, and records the outcome. The requester
 * (`requested_by`) is the operator's actor. A start that certainly failed takes its record back (the same
 * request again makes a new one); one in doubt keeps it (ErasureNotStartedError). The audit rows hold the
 * subject's kind and the company, never the subject.
 */
export async function requestErasure(
  knex: Knex,
  gateway: TemporalGateway,
  config: Pick<Config, 'PAYLOAD_ENCRYPTION_KEYS' | 'SUBJECT_INDEX_KEYS' | 'SUBJECT_INDEX_KEY'>,
  who: OperatorContext,
  body: unknown,
): Promise<{ erasureId: string }> {
  let subject: ReturnType<typeof parseErasureRequest>;
  try {
    subject = parseErasureRequest(body);
  } catch (error) {
    return recordFailedAndThrow(knex, who, { action: 'erasure.request', target: null }, error);
  }
  const { kind, value, companyId } = subject;
  const erasureId = randomUUID();
  const what = {
    action: 'erasure.request',
    target: erasureId,
    parameters: { subject_kind: kind, company_id: companyId },
  } as const;
  // Under every key rows may be indexed with: a process that lacks one is refused, never finds nobody.
  let keys: IndexKeys;
  try {
    keys = await indexKeysOf(knex, dataAtRest(config), { fresh: true });
  } catch (error) {
    return recordFailedAndThrow(knex, who, what, error);
  }
  const subjectKeys = keys.searchUnder.map((key) => subjectKey(key.key, kind, value)!);
  // The record and the intent commit together, before the start: a crash after it leaves both.
  const intent = await knex.transaction(async (trx) => {
    await insertErasure(trx, {
      id: erasureId,
      subjectKind: kind,
      subjectKeys,
      keyIds: keys.searchUnder.map(({ id }) => id),
      companyId,
      requestedBy: who.actor,
    });
    return recordIntent(trx, who, what, knex);
  });
  await intent.settle(async () => {
    try {
      await gateway.actingFor(who.actor).startErasure(erasureId);
    } catch (error) {
      const unknown = error instanceof TemporalUnavailableError && error.outcomeUnknown;
      if (!unknown) await forgetUnstartedErasure(knex, erasureId);
      throw error instanceof TemporalUnavailableError
        ? new ErasureNotStartedError(erasureId, error.reason, unknown)
        : error;
    }
  });
  return { erasureId };
}

/** Where an erasure stands; NotFoundError when there is no such erasure. */
export async function erasureStatus(knex: Knex, erasureId: string): Promise<ErasureView> {
  const view = await readErasure(knex, erasureId);
  if (!view) throw new NotFoundError('erasure', erasureId);
  return view;
}
