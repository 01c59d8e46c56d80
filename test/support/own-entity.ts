import { randomUUID } from 'node:crypto';

// Per-entity ordering (the default) sends one entity's webhooks one at a time. A test about something else that
// sends one fixture many times gives each its own entity, as real traffic about many companies would.

/** Where each event type names its entity's id (events/ordering-key.ts derives the key from it). */
const SET_ENTITY_ID: Readonly<Record<string, (data: Record<string, unknown>, id: string) => void>> = {
  company: (data, id) => (data.company_id = id),
  job: (data, id) => (data.job = { ...(data.job as object), id }),
  candidate: (data, id) => (data.candidate = { ...(data.candidate as object), id }),
};

/** A copy of `event` about an entity of its own: its company, job or candidate id replaced by `id`. */
export function withOwnEntity<T extends { readonly event_type: string; readonly data: unknown }>(
  event: T,
  id: string = randomUUID(),
): T {
  const copy = structuredClone(event);
  const set = SET_ENTITY_ID[copy.event_type];
  if (!set) throw new Error(`no entity id for event_type ${copy.event_type}`);
  set(copy.data as Record<string, unknown>, id);
  return copy;
}
