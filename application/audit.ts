import type { Knex } from 'knex';
import type { AuditAction } from '../lib/vocabulary';
import { insertAuditEvent } from '../store/audit';

/** Who is acting: the audit trail's actor (a token's name, INTERNAL_API_TOKEN, or `cli:<user>@<host>`) and the request. */
export interface OperatorContext {
  readonly actor: string;
  /** The API request's id (X-Request-Id); none for the CLI. */
  readonly requestId?: string;
}

/** What an audited change does: its action, its target (a webhook id, the task queue, a token name) and its parameters. */
export interface AuditedAction {
  readonly action: AuditAction;
  readonly target: string | null;
  /** No secret and no personal data: they are stored as given. */
  readonly parameters?: Readonly<Record<string, unknown>>;
}

/** Control characters and lone surrogates, which PostgreSQL's text refuses (NUL) or cannot encode. */
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

const entry = (who: OperatorContext, what: AuditedAction, failure: string | null) => ({
  actor: who.actor,
  action: what.action,
  target: what.target,
  parameters: what.parameters ?? {},
  outcome: failure === null ? ('succeeded' as const) : ('failed' as const),
  error: failure,
  requestId: who.requestId ?? null,
});

/**
 * A change to PostgreSQL and its audit row in one transaction. When the change throws, its writes are rolled
 * back and the failure is recorded on its own, then rethrown.
 */
export async function auditedChange<T>(knex: Knex, who: OperatorContext, what: AuditedAction, change: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  try {
    return await knex.transaction(async (trx) => {
      const result = await change(trx);
      await insertAuditEvent(trx, entry(who, what, null));
      return result;
    });
  } catch (error) {
    await insertAuditEvent(knex, entry(who, what, auditedFailure(error)));
    throw error;
  }
}

/**
 * A change made outside PostgreSQL (a signal, an update, a cancel or a start in Temporal): its audit row is
 * written once the outcome is known, succeeded or failed. No transaction is held open across the call.
 */
export async function auditedCall<T>(knex: Knex, who: OperatorContext, what: AuditedAction, call: () => Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await call();
  } catch (error) {
    await insertAuditEvent(knex, entry(who, what, auditedFailure(error)));
    throw error;
  }
  await insertAuditEvent(knex, entry(who, what, null));
  return result;
}

/**
 * A failure met outside auditedChange and auditedCall (input the operation refused before any change, a start
 * that failed after its record was committed): recorded as failed, then thrown.
 */
export async function recordFailedAndThrow(knex: Knex, who: OperatorContext, what: AuditedAction, error: unknown): Promise<never> {
  await insertAuditEvent(knex, entry(who, what, auditedFailure(error)));
  throw error;
}
