import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import type { Knex } from 'knex';
import { inParallel } from '../../lib/in-parallel';
import { withCleanups } from '../harness/cleanups';
import { signalsReceived } from '../harness/history';
import type { PartnerServer } from '../harness/partner';
import type { BenchContext } from '../harness/suite';
import {
  assertDelivered,
  operate,
  runPart,
  startServiceRig,
  waitForHealthz,
  waitUntil,
  WARMUP_WEBHOOKS,
  type PartFigures,
  type Rig,
} from '../harness/webhook-part';
import type { Ordering } from './first-try-cost';

/** Worker processes sharing the partner cap in every part. */
export const WORKERS = 2;

const tag = () => `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

/**
 * `body` against a fresh rig: a dev server of its own, the API and WORKERS workers at WEBHOOK_ORDERING `ordering`
 * (always set: the default is about to change) and PARTNER_MAX_PER_SECOND `cap`, after a warm-up.
 */
export function withOrderedRig<T>(
  ctx: BenchContext,
  partner: PartnerServer,
  executable: string,
  settings: { ordering: Ordering; cap: number },
  body: (rig: Rig, address: string) => Promise<T>,
): Promise<T> {
  return withCleanups('ordering', ctx.progress, async (cleanups) => {
    const env = { WEBHOOK_ORDERING: settings.ordering, PARTNER_MAX_PER_SECOND: String(settings.cap) };
    const { server, spawnWorker, rigWith } = await startServiceRig({ ...ctx, partner, executable, cleanups, env });
    const workers = [];
    for (let i = 0; i < WORKERS; i++) workers.push(await spawnWorker());
    const rig = rigWith(workers);
    await waitForHealthz(rig, 'the API', rig.apiUrl, 30_000);
    assertDelivered(
      await runPart(rig, { prefix: `warm-${tag()}`, count: WARMUP_WEBHOOKS, failFirst: false }),
      'the warm-up',
    );
    return body(rig, server.address);
  });
}

/** Part 1: `count` webhooks over `keys` keys, as fast as the cap lets them go; the CPU of the workers and of PostgreSQL a delivery. */
export async function measureManyKeys(rig: Rig, count: number, keys: number) {
  const prefix = `many-${tag()}`;
  const part = await runPart(rig, { prefix, count, failFirst: false, keys });
  assertDelivered(part, `${count} webhooks on ${keys} keys`);
  const cpuMs = (role: string) =>
    (part.processes.filter((p) => p.role === role).reduce((sum, p) => sum + p.cpu, 0) * 1000) / part.accepted;
  return { rate: part.deliveriesPerSecond, workerCpuMs: cpuMs('worker'), postgresCpuMs: cpuMs('postgres') };
}

/**
 * Part 3: `count` webhooks on one key, queued behind their head during a pause, the partner answering `latencyMs`
 * late; no cap in effect. The cycle is the mean time from one arrival to the next, every webhook waiting its turn;
 * the round trip, each POST from sent to answered as the worker times it (webhook_attempts.duration_ms).
 */
export async function measureOneKey(rig: Rig, count: number, latencyMs: number) {
  const { prefix, part } = await drainPaused(rig, 'one', count, 1, latencyMs);
  const arrivals = firstArrivals(part, rig.partner);
  const cycleMs = (Math.max(...arrivals) - Math.min(...arrivals)) / (arrivals.length - 1);
  const [{ ms }] = await rig
    .knex('webhook_attempts as a')
    .join('webhook_events as e', 'e.id', 'a.webhook_id')
    .whereRaw('starts_with(e.event_id, ?)', [`${prefix}-`])
    .select(rig.knex.raw('avg(a.duration_ms)::float8 AS ms'));
  return {
    latencyMs,
    rate: 1000 / cycleMs,
    cycleMs,
    roundTripMs: Number(ms),
    overheadMs: cycleMs - Number(ms),
    order: await sequenceCheck(rig.knex, prefix, rig.partner),
  };
}

/**
 * Part 4: a backlog of `count` webhooks over `keys` keys drained after a pause, from the resume to the last
 * arrival. Wakes are the signals the runs received: `partnerReleased` from the partner recovery (one per held
 * delivery), `orderingTurn` when the webhook ahead settled.
 */
export async function measureBacklog(rig: Rig, address: string, count: number, keys: number) {
  const { prefix, part, resumedAt, heldHeads } = await drainPaused(rig, 'backlog', count, keys);
  const drainSeconds = (Math.max(...firstArrivals(part, rig.partner)) - resumedAt) / 1000;
  const workflowIds: string[] = (
    await rig
      .knex('webhook_events')
      .whereRaw('starts_with(event_id, ?)', [`${prefix}-`])
      .select('workflow_id')
  ).map((row: { workflow_id: string }) => row.workflow_id);
  return {
    count: part.accepted,
    keys,
    heldHeads,
    drainSeconds,
    rate: part.accepted / drainSeconds,
    wakes: await signalsOf(address, workflowIds),
    order: await sequenceCheck(rig.knex, prefix, rig.partner),
  };
}

/** A pause, `count` webhooks over `keys` keys posted, and once every key's head is held, resume; until all are delivered. */
async function drainPaused(rig: Rig, name: string, count: number, keys: number, latencyMs?: number) {
  const prefix = `${name}-${tag()}`;
  await operate(rig, 'pause', { reason: `bench: an ordered backlog (${name})` });
  let [resumedAt, heldHeads] = [NaN, 0];
  const part = await runPart(rig, {
    prefix,
    count,
    failFirst: false,
    keys,
    latencyMs,
    afterIngest: async (accepted) => {
      const held = async () =>
        (heldHeads = Number(
          (
            await rig
              .knex('webhook_events')
              .whereRaw('starts_with(event_id, ?)', [`${prefix}-`])
              .whereNotNull('held_since')
              .count({ n: '*' })
          )[0].n,
        ));
      // Only a key's head claims a send slot, so only heads are held: the others wait behind them.
      if (!(await waitUntil(rig, 'every head held', 120_000, async () => (await held()) >= Math.min(keys, accepted))))
        throw new Error(`${heldHeads} heads held of ${keys} keys`);
      rig.progress(`ordering: ${heldHeads} held of ${accepted}; resume`);
      resumedAt = performance.now();
      await operate(rig, 'resume');
    },
  });
  assertDelivered(part, `${count} webhooks on ${keys} keys after a pause`);
  return { prefix, part, resumedAt, heldHeads };
}

const firstArrivals = (part: PartFigures, partner: PartnerServer) =>
  [...part.acceptedIds].map((id) => partner.receipts.get(id)![0]);

/** The part's keys, and those whose webhooks first reached the partner out of their sequence order. */
async function sequenceCheck(
  knex: Knex,
  prefix: string,
  partner: PartnerServer,
): Promise<{ keys: number; outOfOrder: number }> {
  const places: Array<{ lane_id: string; webhook_id: string }> = await knex('ordering_places as p')
    .join('webhook_events as e', 'e.id', 'p.webhook_id')
    .whereRaw('starts_with(e.event_id, ?)', [`${prefix}-`])
    .orderBy(['p.lane_id', 'p.seq'])
    .select('p.lane_id', 'p.webhook_id');
  const lanes = new Map<string, number[]>();
  for (const { lane_id, webhook_id } of places)
    lanes.set(lane_id, [...(lanes.get(lane_id) ?? []), partner.receipts.get(webhook_id)?.[0] ?? NaN]);
  const outOfOrder = [...lanes.values()].filter((times) => times.some((t, i) => i > 0 && !(t > times[i - 1]))).length;
  return { keys: lanes.size, outOfOrder };
}

/** Signals the runs received, by name, from their histories. */
async function signalsOf(address: string, workflowIds: readonly string[]): Promise<Map<string, number>> {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    const total = new Map<string, number>();
    await inParallel(workflowIds.length, 16, async (i) => {
      for (const [name, n] of signalsReceived(await client.workflow.getHandle(workflowIds[i]).fetchHistory()))
        total.set(name, (total.get(name) ?? 0) + n);
    });
    return total;
  } finally {
    await connection.close();
  }
}
