// Free of imports, so the workflow bundle can use it.

/** The longest ordering key accepted (`ordering_key`, or one derived from an event's data). */
export const MAX_ORDERING_KEY_LENGTH = 256;

/** The entity an event type is about, and where its data names that entity's id. */
const ENTITY_IDS: Readonly<Record<string, (data: Record<string, unknown>) => unknown>> = {
  company: (data) => data.company_id ?? (data.company as { id?: unknown } | undefined)?.id,
  job: (data) => (data.job as { id?: unknown } | undefined)?.id,
  candidate: (data) => (data.candidate as { id?: unknown } | undefined)?.id,
};

/**
 * The ordering key of an event: the upstream system's own (`given`) wins; otherwise `company:<id>`,
 * `job:<data.job.id>` or `candidate:<data.candidate.id>` where the data names that id (a string or an integer),
 * within MAX_ORDERING_KEY_LENGTH. Undefined: the webhook is unordered.
 */
export function orderingKeyOf(
  event: { readonly event_type: string; readonly data: unknown },
  given?: string,
): string | undefined {
  if (given !== undefined) return given;
  const data = event.data;
  if (data === null || typeof data !== 'object') return undefined;
  const id = ENTITY_IDS[event.event_type]?.(data as Record<string, unknown>);
  const text = typeof id === 'string' && id !== '' ? id : Number.isSafeInteger(id) ? String(id) : undefined;
  if (text === undefined) return undefined;
  const key = `${event.event_type}:${text}`;
  return key.length <= MAX_ORDERING_KEY_LENGTH ? key : undefined;
}
