import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AuditAction } from '../../lib/vocabulary';
import { insertAuditEvent, type AuditEntry } from '../../store/access/audit';

/**
 * Who is acting: the audit trail's actor (a token's name, INTERNAL_API_TOKEN, or `cli:<user>@<host>`) and the request.
 */
export interface OperatorContext {
  readonly actor: string;
  /** The API request's id (X-Request-Id); none for the CLI. */
  readonly requestId?: string;
}

/**
 * What an audited change does: its action, its target (a webhook id, the task queue, a token name) and its parameters.
 */
export interface AuditedAction {
  readonly action: AuditAction;
  readonly target: string | null;
  /** No secret and no personal data: they are stored as given. */
  readonly parameters?: Readonly<Record<string, unknown>>;
}

/** Control characters and lone surrogates, which PostgreSQL's text refuses (NUL) or cannot encode. */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const UNSTORABLE = /[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Longest error text an audit row keeps. */
const MAX_FAILURE_LENGTH = 500;

/**
 * The words a failed change is recorded with: the error's kind and message, which the service's own errors keep
 * free of secrets and personal data. A refused request's message can quote a field name the caller sent, so
 * what PostgreSQL cannot store is replaced, and the text is cut to a bounded length.
 */
export function auditedFailure(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.replace(UNSTORABLE, '\ufffd').slice(0, MAX_FAILURE_LENGTH);
}

type Recorded = Pick<AuditEntry, 'operationId' | 'phase' | 'outcome' | 'error'>;

const entry = (who: OperatorContext, what: AuditedAction, recorded: Recorded): AuditEntry => ({
  ...recorded,
  actor: who.actor,
  action: what.action,
  target: what.target,
  parameters: what.parameters ?? {},
  requestId: who.requestId ?? null,
});

const outcomeOf = (operationId: string, failure: string | null): Recorded => ({
  operationId,
  phase: 'outcome',
  outcome: failure === null ? 'succeeded' : 'failed',
  error: failure,
});

/**
 * A change to PostgreSQL and its audit row in one transaction: neither stays without the other. When the change
 * throws, its writes are rolled back and the failure is recorded on its own, then rethrown.
 */
export async function auditedChange<T>(
  knex: Knex,
  who: OperatorContext,
  what: AuditedAction,
  change: (trx: Knex.Transaction) => Promise<T>,
): Promise<T> {
  const operationId = randomUUID();
  try {
    return await knex.transaction(async (trx) => {
      const result = await change(trx);
      await insertAuditEvent(trx, entry(who, what, outcomeOf(operationId, null)));
      return result;
    });
  } catch (error) {
    await insertAuditEvent(knex, entry(who, what, outcomeOf(operationId, auditedFailure(error))));
    throw error;
  }
}

/**
 * An operation that acts outside one PostgreSQL transaction (a call to Temporal, a purge in batches, a POST to
 * the partner): its `intent` row is committed before it acts, and its `outcome` row, with the same operation id,
 * once the outcome is known. A crash between the two leaves the intent, which `audit list` shows without an
 * outcome. No transaction is held open across the call. recordIntent writes an intent in a transaction of the
 * caller's instead (with a record the operation needs), which commits before `settle`.
 */
export async function auditedCall<T>(
  knex: Knex,
  who: OperatorContext,
  what: AuditedAction,
  call: () => Promise<T>,
): Promise<T> {
  const operation = await recordIntent(knex, who, what);
  return operation.settle(call);
}

/** An intent written, and the way to record its outcome. */
export interface AuditedIntent {
  readonly operationId: string;
  /** Runs `call` and records its outcome (succeeded, or failed and rethrown). */
  settle<T>(call: () => Promise<T>): Promise<T>;
}

/** Writes the intent row of an operation (in `knex`, which may be the transaction of the record it acts on). */
export async function recordIntent(
  knex: Knex,
  who: OperatorContext,
  what: AuditedAction,
  outcomeKnex: Knex = knex,
): Promise<AuditedIntent> {
  const operationId = randomUUID();
  await insertAuditEvent(knex, entry(who, what, { operationId, phase: 'intent', outcome: null, error: null }));
  return {
    operationId,
    async settle(call) {
      let result;
      try {
        result = await call();
      } catch (error) {
        await insertAuditEvent(outcomeKnex, entry(who, what, outcomeOf(operationId, auditedFailure(error))));
        throw error;
      }
      await insertAuditEvent(outcomeKnex, entry(who, what, outcomeOf(operationId, null)));
      return result;
    },
  };
}

/**
 * A failure met before the operation acted (input it refused, a check that failed): one `failed` row, then thrown.
 */
export async function recordFailedAndThrow(
  knex: Knex,
  who: OperatorContext,
  what: AuditedAction,
  error: unknown,
): Promise<never> {
  await insertAuditEvent(knex, entry(who, what, outcomeOf(randomUUID(), auditedFailure(error))));
  throw error;
}
