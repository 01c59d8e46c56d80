import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { z } from 'zod';
import type { Config } from '../lib/config';
import { dataAtRest } from '../lib/at-rest';
import { subjectKey, type SubjectKind } from '../lib/subject-index';
import { formatPathError, isStorableText, unstorableTextIssue, zodPathErrors, type PathError } from '../lib/validation';
import { forgetUnstartedErasure, insertErasure, readErasure, type ErasureView } from '../store/erasures';
import { TemporalUnavailableError, type TemporalGateway } from './temporal-gateway';
import { auditedChange, recordFailedAndThrow, type OperatorContext } from './audit';

// An erasure request, shared by POST /internal/v1/erasures and `partner-service erase`: validated, recorded
// with the subject's HMAC only, and handed to the `eraseSubject` workflow, which does the work.

/** A request that does not hold up: the API answers 400, the CLI exits 2. */
export class ErasureRequestError extends Error {
  constructor(readonly errors: readonly PathError[]) {
    super(errors.map(formatPathError).join('; '));
    this.name = 'ErasureRequestError';
  }
}

const text = z.string({ message: 'must be a string' }).min(1, { message: 'must not be empty' }).refine(isStorableText, unstorableTextIssue);
const companyId = text.optional().meta({ description: "Only this company's webhooks." });

/** The body of an erasure request: one subject, a candidate's id or an e-mail address, and optionally a company. */
export const erasureRequest = z.union([
  z.strictObject({
    candidate_id: text.meta({ description: "The candidate's id, as `data.candidate.id` carries it." }),
    company_id: companyId,
  }),
  z.strictObject({
    email: z.email({ message: 'must be an e-mail address' }).meta({ description: "A candidate's or a request author's e-mail address (compared without case)." }),
    company_id: companyId,
  }),
]);

export type ErasureRequest = z.infer<typeof erasureRequest>;

/** The subject of a valid request. Both subjects or neither is one error at the root; otherwise zod's per field. */
export function parseErasureRequest(body: unknown): { kind: SubjectKind; value: string; companyId: string | null } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ErasureRequestError([{ path: '(root)', message: 'must be an object with candidate_id or email' }]);
  }
  const given = ['candidate_id', 'email'].filter((field) => Object.hasOwn(body, field));
  if (given.length !== 1) {
    throw new ErasureRequestError([{ path: '(root)', message: given.length ? 'give candidate_id or email, not both' : 'give candidate_id or email' }]);
  }
  const parsed = erasureRequest.safeParse(body);
  if (!parsed.success) {
    // The union's own issue names no field: the branch of the subject given says what is wrong.
    const branch = erasureRequest.options[given[0] === 'candidate_id' ? 0 : 1].safeParse(body);
    throw new ErasureRequestError(branch.success ? zodPathErrors(parsed.error) : zodPathErrors(branch.error));
  }
  const request = parsed.data;
  const [kind, value]: [SubjectKind, string] = 'email' in request ? ['email', request.email] : ['candidate_id', request.candidate_id];
  return { kind, value, companyId: request.company_id ?? null };
}

/**
 * Temporal did not start the erasure's workflow. Certainly not: the record is removed again, nothing was erased,
 * and the request may be sent again. In doubt (Temporal was reached but did not answer in time): the record
 * stays, and its status URL shows whether the work began.
 */
export class ErasureNotStartedError extends Error {
  constructor(
    readonly erasureId: string,
    readonly reason: string,
    readonly outcomeUnknown: boolean,
  ) {
    super(
      outcomeUnknown
        ? `Erasure ${erasureId} may or may not have started: Temporal did not answer in time (${reason}). Check its status before sending the request again.`
        : `The erasure was not started, since Temporal is unavailable (${reason}): nothing was recorded or erased. Send the request again later.`,
    );
    this.name = 'ErasureNotStartedError';
  }
}

export class ErasureNotFoundError extends Error {
  constructor(readonly erasureId: string) {
    super(`No erasure ${erasureId}.`);
    this.name = 'ErasureNotFoundError';
  }
}

/**
 * Records the request (the subject's HMAC, never the subject) and its audit row in one transaction, then starts
 * its workflow, acting for the operator. The requester (`requested_by`) is the operator's actor. A start that
 * certainly failed takes its record back (the same request again makes a new one) and records that failure in
 * a second audit row; one in doubt keeps it (ErasureNotStartedError). The audit rows hold the subject's kind
 * and the company, never the subject.
 */
export async function requestErasure(
  knex: Knex,
  gateway: TemporalGateway,
  config: Pick<Config, 'SUBJECT_INDEX_KEY'>,
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
  const what = { action: 'erasure.request', target: erasureId, parameters: { subject_kind: kind, company_id: companyId } } as const;
  await auditedChange(knex, who, what, (trx) =>
    insertErasure(trx, { id: erasureId, subjectKind: kind, subjectKey: subjectKey(dataAtRest(config).subjectSecret, kind, value), companyId, requestedBy: who.actor }),
  );
  try {
    await gateway.actingFor(who.actor).startErasure(erasureId);
  } catch (error) {
    const unknown = error instanceof TemporalUnavailableError && error.outcomeUnknown;
    if (!unknown) await forgetUnstartedErasure(knex, erasureId);
    const failure = error instanceof TemporalUnavailableError ? new ErasureNotStartedError(erasureId, error.reason, unknown) : error;
    return recordFailedAndThrow(knex, who, what, failure);
  }
  return { erasureId };
}

/** Where an erasure stands; ErasureNotFoundError when there is no such erasure. */
export async function erasureStatus(knex: Knex, erasureId: string): Promise<ErasureView> {
  const view = await readErasure(knex, erasureId);
  if (!view) throw new ErasureNotFoundError(erasureId);
  return view;
}
