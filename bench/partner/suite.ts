import { withCleanups } from '../harness/cleanups';
import { appGet, grantApp } from '../harness/partner-apps';
import { table, verdict } from '../harness/render';
import { median, quantiles } from '../harness/stats';
import type { BenchmarkSuite } from '../harness/suite';
import { CONCURRENCY, EVENT, ingest, startIngestionApi } from '../harness/webhook-part';

const [ROUNDS, WEBHOOKS, GOAL, APPS] = [6, 400, 0.95, 4];
/** Each app's budget, as configured, and the pace its client keeps: the most it may ask, every request spent. */
const PER_MINUTE = 600;
const COMPANY = (EVENT.data as { company: { id: string } }).company.id;

type Get = (path: string) => ReturnType<typeof appGet>;

/** The app's reads in turn: the list's first page, the newest row's detail and health, where the API has them. */
async function readsOf(get: Get): Promise<{ names: string[]; reads: Array<() => ReturnType<Get>> }> {
  let id = (JSON.parse((await get('/partner/v1/webhooks')).text) as { results: Array<{ id: string }> }).results[0].id;
  const list = async () => {
    const reply = await get('/partner/v1/webhooks');
    id = (JSON.parse(reply.text) as { results: Array<{ id: string }> }).results[0]?.id ?? id;
    return reply;
  };
  const more: Array<[string, () => ReturnType<Get>]> = [
    ['GET /webhooks/{id}', () => get(`/partner/v1/webhooks/${id}`)],
    ['GET /health', () => get('/partner/v1/health')],
  ];
  const served = [];
  for (const [name, read] of more) if ((await read()).status === 200) served.push([name, read] as const);
  return {
    names: ['GET /webhooks', ...served.map(([name]) => name)],
    reads: [list, ...served.map(([, read]) => read)],
  };
}

/** One app's client: its reads in turn, one every 60 s / PER_MINUTE (its whole budget), until `stop`. */
async function poll(reads: Array<() => ReturnType<Get>>, stop: AbortSignal) {
  const statuses = new Map<number, number>();
  const answerMs: number[] = [];
  for (let k = 0; !stop.aborted; k++) {
    const due = performance.now() + 60_000 / PER_MINUTE;
    const { status, ms } = await reads[k % reads.length]();
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    answerMs.push(ms);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
  }
  return { statuses, answerMs };
}

/**
 * Ingestion (POST /internal/v1/webhooks, each starting its workflow) through `partner-service api` on a dev server,
 * no worker (only ingestion is measured, as in `tokens`), alone and while APPS partner apps read at their budget,
 * in rounds alternating which goes first; the median of the rounds' ratios.
 */
export const partnerSuite: BenchmarkSuite = {
  name: 'partner',
  title: 'Ingestion with the partner API in use',
  run: ({ databaseUrl, knex, progress }) =>
    withCleanups('partner', progress, async (cleanups) => {
      const env = { PARTNER_API_REQUESTS_PER_MINUTE: String(PER_MINUTE) };
      const rig = await startIngestionApi({ databaseUrl, knex, cleanups, progress, env });
      const apps = [];
      for (let a = 0; a < APPS; a++) {
        const headers = await grantApp(knex, `bench-partner-${a}`, [COMPANY, `bench-other-${a}`]);
        apps.push(await readsOf((path) => appGet(rig.apiUrl, path, headers)));
      }
      const rates: Record<'alone' | 'read', number[]> = { alone: [], read: [] };
      const reads = { statuses: new Map<number, number>(), answerMs: [] as number[] };
      // The API process's CPU seconds and wall seconds during each kind's timed ingestion: how busy the reads keep it.
      const api = rig.processes.find((p) => p.role === 'api')!;
      const busy = { alone: [0, 0], read: [0, 0] };
      const ingestion = async (kind: 'alone' | 'read', round: number) => {
        const [started, cpu] = [performance.now(), api.cpuSeconds()];
        const { accepted, refused } = await ingest(rig.apiUrl, `${kind}-${round}`, WEBHOOKS);
        if (accepted.size !== WEBHOOKS)
          throw new Error(
            `${kind} round ${round + 1}: ${accepted.size} accepted, refused ${JSON.stringify([...refused])}`,
          );
        rates[kind].push(WEBHOOKS / ((performance.now() - started) / 1000));
        busy[kind] = [busy[kind][0] + api.cpuSeconds() - cpu, busy[kind][1] + (performance.now() - started) / 1000];
      };
      for (let round = 0; round < ROUNDS; round++) {
        progress(`partner: round ${round + 1}/${ROUNDS}`);
        for (const kind of round % 2 ? (['read', 'alone'] as const) : (['alone', 'read'] as const)) {
          if (kind === 'alone') {
            await ingestion(kind, round);
            continue;
          }
          const stop = new AbortController();
          const clients = apps.map((app) => poll(app.reads, stop.signal));
          // The clients at their pace before the timing starts.
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          await ingestion(kind, round).finally(() => stop.abort());
          for (const { statuses, answerMs } of await Promise.all(clients)) {
            for (const [status, count] of statuses)
              reads.statuses.set(status, (reads.statuses.get(status) ?? 0) + count);
            reads.answerMs.push(...answerMs);
          }
        }
      }
      const ratios = rates.read.map((rate, r) => rate / rates.alone[r]);
      const ratio = median(ratios);
      const q = quantiles(reads.answerMs);
      return [
        `${ROUNDS} rounds on one \`partner-service api\` and a dev server, no worker (only ingestion is measured, as in \`tokens\`; a worker's deliveries would load both sides alike). ` +
          `In each round ${WEBHOOKS} webhooks are POSTed with ${CONCURRENCY} in flight alone, and ${WEBHOOKS} more while ${APPS} partner apps ` +
          `(each granted the webhooks' company and one more) read at PARTNER_API_REQUESTS_PER_MINUTE ${PER_MINUTE}, one request every ${60_000 / PER_MINUTE} ms each, ` +
          `in turn: ${apps[0].names.join(', ')}; which goes first alternates. A rate is the webhooks over the time until the last 202. After 100 webhooks of warm-up.`,
        '',
        table(
          ['ingestion', '>median rate', '>rate per round'],
          [
            ['alone', `${median(rates.alone).toFixed(1)}/s`, rates.alone.map((r) => r.toFixed(0)).join(', ')],
            [
              `with ${APPS} apps reading`,
              `${median(rates.read).toFixed(1)}/s`,
              rates.read.map((r) => r.toFixed(0)).join(', '),
            ],
          ],
        ),
        '',
        `With ÷ alone, the median of the rounds' ratios (${ratios.map((r) => r.toFixed(2)).join(', ')}): ${ratio.toFixed(3)} (goal ≥ ${GOAL}: ${verdict(ratio >= GOAL)}).`,
        '',
        `The apps' reads during ingestion: ${reads.answerMs.length.toLocaleString('en')} requests, answers ${JSON.stringify(Object.fromEntries(reads.statuses))}, ` +
          `p50 ${q.p50.toFixed(1)} ms, p99 ${q.p99.toFixed(1)} ms. The API process's CPU during the timed ingestion: ` +
          `${(['alone', 'read'] as const).map((k) => `${k === 'alone' ? 'alone' : 'with the reads'} ${((1000 * busy[k][0]) / (ROUNDS * WEBHOOKS)).toFixed(1)} ms per webhook, ${((100 * busy[k][0]) / busy[k][1]).toFixed(0)} % of a core`).join('; ')}.`,
      ].join('\n');
    }),
};
