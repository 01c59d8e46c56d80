import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { table } from '../harness/render';
import { median } from '../harness/stats';
import type { BenchmarkSuite } from '../harness/suite';
import { WARMUP_WEBHOOKS } from '../harness/webhook-part';
import { reportFloor, type FloorFigures, type FloorRun } from './report';
import { measureFloor, type FloorVariant } from './suite';

/** `start` with one fresh key: bodies and excerpts sealed at rest, and Temporal's payloads through the codec. */
const KEY_ID = 'bench';
const ENCRYPTION_ON: FloorVariant = {
  name: 'encryption on (PAYLOAD_ENCRYPTION_KEYS)',
  env: { PAYLOAD_ENCRYPTION_KEYS: `${KEY_ID}:${randomBytes(32).toString('base64')}` },
  nodeArgs: [],
};

const rate = (run: FloorRun) => run.deliveriesPerSecond;
const times = (value: number) => `${value.toFixed(2)} ×`;
const perDelivery = (runs: readonly FloorRun[], cpu: (run: FloorRun) => number) => `${median(runs.map((run) => (cpu(run) * 1000) / run.deliveries)).toFixed(2)} ms`;

/** Each round's rates and ratios with encryption off and on, their medians, and CPU per delivery of both. */
export function reportEncryption(f: FloorFigures, resting: Resting): string {
  const rows = f.rounds.map((round) => {
    const on = round.variants[0];
    return { bare: rate(round.bare), off: rate(round.service), on: rate(on), offToBare: rate(round.service) / rate(round.bare), onToBare: rate(on) / rate(round.bare), onToOff: rate(on) / rate(round.service) };
  });
  const line = (label: string, r: (typeof rows)[number]) =>
    [label, `${r.bare.toFixed(1)}/s`, `${r.off.toFixed(1)}/s`, `${r.on.toFixed(1)}/s`, times(r.offToBare), times(r.onToBare), times(r.onToOff)];
  const medianOf = (pick: (r: (typeof rows)[number]) => number) => median(rows.map(pick));
  const medians = { bare: medianOf((r) => r.bare), off: medianOf((r) => r.off), on: medianOf((r) => r.on), offToBare: medianOf((r) => r.offToBare), onToBare: medianOf((r) => r.onToBare), onToOff: medianOf((r) => r.onToOff) };
  const off = f.rounds.map((r) => r.service);
  const on = f.rounds.map((r) => r.variants[0]);
  return [
    '`start` runs twice in every round, beside the bare workflow: without PAYLOAD_ENCRYPTION_KEYS (bodies and response excerpts in clear, ' +
      "Temporal's payloads as plain JSON), then with one fresh key (both sealed with AES-256-GCM: each body and excerpt in PostgreSQL, " +
      "each payload through Temporal's codec). The ratio to bare is the floor's; on / off is the cost of encryption at rest and in Temporal together. " +
      `The suite's database holds afterwards ${resting.clear.toLocaleString('en')} bodies in clear and ${resting.sealed.toLocaleString('en')} sealed under the variant's key, with as many excerpts each: every delivery of each run rested as its setting says.`,
    '',
    table(['round', '>bare', '>service, encryption off', '>service, encryption on', '>off / bare', '>on / bare', '>on / off'], [
      ...rows.map((r, i) => line(String(i + 1), r)),
      line('**median**', medians),
    ]),
    '',
    table(['`start`', '>CPU per delivery: `start`', '>PostgreSQL', '>Temporal dev server', '>events', '>actions'], [
      ['encryption off', perDelivery(off, (r) => r.cpu.worker), perDelivery(off, (r) => r.cpu.postgres), perDelivery(off, (r) => r.cpu.temporal), off[0].history.events, off[0].history.actions],
      ['encryption on', perDelivery(on, (r) => r.cpu.worker), perDelivery(on, (r) => r.cpu.postgres), perDelivery(on, (r) => r.cpu.temporal), on[0].history.events, on[0].history.actions],
    ]),
  ].join('\n');
}

/** How the suite's rows rest: bodies and excerpts in clear, and sealed under the variant's key. */
interface Resting {
  readonly clear: number;
  readonly sealed: number;
}

/** Counts how the runs' bodies and excerpts rest; throws unless each run's rows rest as its setting says. */
async function restingRows(knex: Knex, expectedEach: number): Promise<Resting> {
  const { rows: [counts] } = await knex.raw<{ rows: Array<Record<'clear' | 'sealed' | 'clear_excerpts' | 'sealed_excerpts', number>> }>(
    `SELECT (SELECT count(*)::int FROM webhook_events WHERE body IS NOT NULL) AS clear,
            (SELECT count(*)::int FROM webhook_events WHERE body_key_id = ?) AS sealed,
            (SELECT count(*)::int FROM webhook_attempts WHERE response_body IS NOT NULL) AS clear_excerpts,
            (SELECT count(*)::int FROM webhook_attempts WHERE response_body_key_id = ?) AS sealed_excerpts`,
    [KEY_ID, KEY_ID],
  );
  const found = [counts.clear, counts.sealed, counts.clear_excerpts, counts.sealed_excerpts];
  if (found.some((count) => count !== expectedEach)) throw new Error(`expected ${expectedEach} bodies and excerpts in clear and as many sealed; found ${found.join(', ')}`);
  return { clear: counts.clear, sealed: counts.sealed };
}

/** The floor with encryption off and on, side by side in each round; the floor suite's own figures below. */
export const floorEncryptionSuite: BenchmarkSuite = {
  name: 'floor-encryption',
  title: 'Encryption at rest: the floor with encryption on and off',
  async run(ctx) {
    const figures = await measureFloor(ctx, [ENCRYPTION_ON]);
    const perRun = figures.rounds[0].service.deliveries + WARMUP_WEBHOOKS;
    const resting = await restingRows(ctx.knex, perRun * figures.rounds.length);
    return [reportEncryption(figures, resting), '', '### Every run', '', reportFloor(figures)].join('\n');
  },
};
