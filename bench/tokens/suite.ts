import { createTokenChecker } from '../../application/access/token-checker';
import { createApiToken, parseTokenRequest } from '../../application/access/tokens';
import { createLogger } from '../../lib/logger';
import { withCleanups } from '../harness/cleanups';
import { table, verdict } from '../harness/render';
import { median, quantiles } from '../harness/stats';
import type { BenchmarkSuite } from '../harness/suite';
import { CONCURRENCY, ingest, startIngestionApi } from '../harness/webhook-part';

const ROUNDS = 6;
const WEBHOOKS = 400;
const GOAL = 0.95;
const CHECKS = 100_000;
const SHARED = 'bench-shared-token-0123456789abcdef';

/** Nanoseconds per check() of the header, in this process: the token check alone, without HTTP or the route. */
async function checkCost(
  knex: Parameters<typeof createTokenChecker>[0]['knex'],
  headers: Record<'scoped' | 'shared', string>,
) {
  const checker = createTokenChecker({ knex, logger: createLogger('error'), sharedToken: SHARED });
  await checker.start();
  const ns: Record<string, number> = {};
  try {
    for (const kind of ['scoped', 'shared', 'scoped', 'shared'] as const) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < CHECKS; i++)
        if (checker.check(headers[kind]).kind !== 'valid') throw new Error(`the ${kind} token was refused`);
      ns[kind] = Number(process.hrtime.bigint() - started) / CHECKS;
    }
  } finally {
    await checker.close();
  }
  return ns as Record<'scoped' | 'shared', number>;
}

/**
 * Ingestion (POST /internal/v1/webhooks, each starting its workflow) through `partner-service api` with a named
 * token of scope ingest and with the shared INTERNAL_API_TOKEN, both at once in each round, on one API and one
 * dev server (no worker: only ingestion is measured).
 */
export const tokensSuite: BenchmarkSuite = {
  name: 'tokens',
  title: 'Ingestion with a scoped token and with the shared token',
  run: ({ databaseUrl, knex, progress }) =>
    withCleanups('tokens', progress, async (cleanups) => {
      // Before the API starts, so that its first load of the tokens has it.
      const scoped = await createApiToken(
        knex,
        { actor: 'bench' },
        parseTokenRequest({ name: 'bench-ingest', scopes: 'ingest' }),
      );
      const rig = await startIngestionApi({ databaseUrl, knex, cleanups, progress });
      const kinds = { scoped: scoped.token, shared: undefined } as const;
      const rates: Record<keyof typeof kinds, number[]> = { scoped: [], shared: [] };
      const answers: Record<keyof typeof kinds, number[]> = { scoped: [], shared: [] };
      const ratios: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // Both at once: whatever else loads the machine loads both alike.
        progress(`tokens: round ${round + 1}/${ROUNDS}`);
        const started = performance.now();
        // Which kind's first requests leave first alternates.
        const order = round % 2 ? (['shared', 'scoped'] as const) : (['scoped', 'shared'] as const);
        await Promise.all(
          order.map(async (kind) => {
            const { accepted, refused, answerMs } = await ingest(rig.apiUrl, `${kind}-${round}`, WEBHOOKS, {
              token: kinds[kind],
            });
            if (accepted.size !== WEBHOOKS)
              throw new Error(
                `${kind} round ${round + 1}: ${accepted.size} of ${WEBHOOKS} accepted, refused ${JSON.stringify([...refused])}`,
              );
            rates[kind].push(WEBHOOKS / ((performance.now() - started) / 1000));
            answers[kind].push(...answerMs);
          }),
        );
        ratios.push(rates.scoped[round] / rates.shared[round]);
      }
      const ratio = median(ratios);
      const check = await checkCost(knex, { scoped: `Bearer ${scoped.token}`, shared: `Bearer ${SHARED}` });
      const used = await knex('api_tokens').where({ name: 'bench-ingest' }).first('last_used_at');
      const row = (kind: keyof typeof kinds, label: string) => {
        const q = quantiles(answers[kind]);
        return [
          label,
          `${median(rates[kind]).toFixed(1)}/s`,
          rates[kind].map((r) => r.toFixed(0)).join(', '),
          `${q.p50.toFixed(1)} ms`,
          `${q.p99.toFixed(1)} ms`,
        ];
      };
      return [
        `${ROUNDS} rounds; in each, ${WEBHOOKS} webhooks with a named token of scope \`ingest\` and ${WEBHOOKS} with the shared INTERNAL_API_TOKEN are POSTed ` +
          `at the same time, each kind with ${CONCURRENCY} requests in flight (the example candidate/new event, each its own event_id and candidate), to one ` +
          "`partner-service api` on a dev server, no worker: each 202 is the row written and the workflow started. A kind's rate is its webhooks over " +
          "the time until its last 202; running both at once puts whatever else loads the machine on both alike, and which kind's requests leave first alternates. After 100 webhooks of warm-up.",
        '',
        table(
          ['token', '>median rate', '>rate per round', '>answer p50', '>answer p99'],
          [row('scoped', 'named, scope ingest'), row('shared', 'INTERNAL_API_TOKEN')],
        ),
        '',
        `Scoped ÷ shared, the median of the rounds' ratios (${ratios.map((r) => r.toFixed(2)).join(', ')}): ${ratio.toFixed(3)} (goal ≥ ${GOAL}: ${verdict(ratio >= GOAL)}).`,
        '',
        `The token check alone (\`check()\` of the Authorization header, ${CHECKS.toLocaleString('en')} times each, second of two passes): ` +
          `${(check.scoped / 1000).toFixed(2)} µs for the named token, ${(check.shared / 1000).toFixed(2)} µs for the shared one, against answers of hundreds of ms.`,
        '',
        "A named token is checked in memory: its id names the one salted hash to compare, and the tokens are reloaded every second. Its last use is noted in memory and written by that reload, not on the request's path " +
          `(the token's last_used_at after the run: ${used?.last_used_at ? 'set' : 'not set'}).`,
      ].join('\n');
    }),
};
