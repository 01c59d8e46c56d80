import { dataAtRest } from '../../lib/at-rest';
import { loadConfig } from '../../lib/config';
import { readFeed, type FeedPosition } from '../../store/webhooks/partner-feed';
import { envelopeBody, toEnvelope } from '../../events/envelope';
import { openBody, type BodyColumns } from '../../store/webhooks/webhook-rows';
import { withCleanups } from '../harness/cleanups';
import { table, verdict } from '../harness/render';
import { median } from '../harness/stats';
import type { BenchmarkSuite } from '../harness/suite';
import { CONCURRENCY, EVENT, ingest, startIngestionApi } from '../harness/webhook-part';

// The pull feed's costs (docs/partners.md, "The feed"): ingestion with and without its bookkeeping (migration 033's
// column default, index and notify trigger), and a reader catching up on 100,000 events through the feed's
// statement against a plain `SELECT … ORDER BY id` of the same rows.

const [ROUNDS, WEBHOOKS, INGEST_GOAL] = [6, 400, 0.95];
const [CATCH_UP, PAGE, CATCH_UP_GOAL] = [100_000, 500, 0.8];

/** Migration 033's bookkeeping on the write path, as it creates it, and its removal for the side-by-side rounds. */
const WITHOUT = [
  "ALTER TABLE webhook_events ALTER COLUMN feed_xid SET DEFAULT '0'",
  'DROP TRIGGER webhook_events_feed_notify ON webhook_events',
  'DROP INDEX webhook_events_feed',
];
const WITH = [
  'ALTER TABLE webhook_events ALTER COLUMN feed_xid SET DEFAULT pg_current_xact_id()',
  `CREATE TRIGGER webhook_events_feed_notify AFTER INSERT ON webhook_events
     FOR EACH STATEMENT EXECUTE FUNCTION partner_feed_notify()`,
  'CREATE INDEX webhook_events_feed ON webhook_events (company_id, feed_xid, id)',
];

export const feedSuite: BenchmarkSuite = {
  name: 'feed',
  title: "The partner's pull feed: ingestion with its bookkeeping, a reader catching up",
  run: ({ databaseUrl, knex, progress }) =>
    withCleanups('feed', progress, async (cleanups) => {
      const rig = await startIngestionApi({ databaseUrl, knex, cleanups, progress });
      const rates: Record<'with' | 'without', number[]> = { with: [], without: [] };
      // The database starts migrated: with the bookkeeping.
      let state = 'with' as 'with' | 'without';
      const ingestion = async (kind: 'with' | 'without', round: number) => {
        if (kind !== state) for (const statement of kind === 'with' ? WITH : WITHOUT) await knex.raw(statement);
        state = kind;
        const started = performance.now();
        const { accepted } = await ingest(rig.apiUrl, `${kind}-${round}`, WEBHOOKS);
        if (accepted.size !== WEBHOOKS) throw new Error(`${kind} round ${round + 1}: ${accepted.size} accepted`);
        rates[kind].push(WEBHOOKS / ((performance.now() - started) / 1000));
      };
      for (let round = 0; round < ROUNDS; round++) {
        progress(`feed: ingestion round ${round + 1}/${ROUNDS}`);
        const order = round % 2 ? (['with', 'without'] as const) : (['without', 'with'] as const);
        for (const kind of order) await ingestion(kind, round);
      }
      // Left as the migration makes it.
      if (state === 'without') for (const statement of WITH) await knex.raw(statement);
      const ratios = rates.with.map((rate, r) => rate / rates.without[r]);
      const ingestRatio = median(ratios);

      progress(`feed: seeding ${CATCH_UP.toLocaleString('en')} webhooks of one company`);
      const catchUpCompany = 'bench-feed-company';
      const body = envelopeBody(toEnvelope({ ...EVENT, event_id: 'bench-feed' }));
      await knex.raw(
        `INSERT INTO webhook_events (id, event_id, event_type, action, company_id, body, workflow_id, status,
                                     created_at, accepted_at)
         SELECT gen_random_uuid(), 'feed-' || n, 'candidate', 'new', ?, ?::json, 'feed-' || n, 'delivered', now(), now()
           FROM generate_series(1, ?) n`,
        [catchUpCompany, body, CATCH_UP],
      );
      await knex.raw('VACUUM ANALYZE webhook_events');
      const atRest = dataAtRest(loadConfig({}));
      const feedCatchUp = async () => {
        const began = performance.now();
        let after: FeedPosition | undefined;
        let read = 0;
        for (;;) {
          const rows = await readFeed(knex, atRest, [catchUpCompany], {}, { after, limit: PAGE });
          if (rows.length === 0) break;
          for (const row of rows) if (row.event) envelopeBody(row.event);
          read += rows.length;
          after = rows.at(-1)!.position;
        }
        return { read, ms: performance.now() - began };
      };
      const plainCatchUp = async () => {
        const began = performance.now();
        let after = '00000000-0000-0000-0000-000000000000';
        let read = 0;
        for (;;) {
          const { rows } = await knex.raw<{ rows: Array<BodyColumns & { id: string }> }>(
            `SELECT id, event_type, action, company_id, accepted_at, status, body, body_sealed, body_key_id,
                    redelivery_of
               FROM webhook_events WHERE company_id = ? AND id > ? ORDER BY id LIMIT ?`,
            [catchUpCompany, after, PAGE],
          );
          if (rows.length === 0) break;
          for (const row of rows) envelopeBody(openBody(atRest, row.id, row)!);
          read += rows.length;
          after = rows.at(-1)!.id;
        }
        return { read, ms: performance.now() - began };
      };
      // The plain read's index, as a table of that shape would have; dropped after.
      await knex.raw('CREATE INDEX bench_feed_plain ON webhook_events (company_id, id)');
      cleanups.push(() => knex.raw('DROP INDEX IF EXISTS bench_feed_plain'));
      const times: Record<'feed' | 'plain', number[]> = { feed: [], plain: [] };
      for (let round = 0; round < 3; round++) {
        progress(`feed: catch-up round ${round + 1}/3`);
        for (const kind of round % 2 ? (['plain', 'feed'] as const) : (['feed', 'plain'] as const)) {
          const { read, ms } = await (kind === 'feed' ? feedCatchUp() : plainCatchUp());
          if (read !== CATCH_UP) throw new Error(`the ${kind} reader read ${read} of ${CATCH_UP}`);
          times[kind].push(ms);
        }
      }
      const catchUpRatio = median(times.plain) / median(times.feed);
      return [
        `### Ingestion with the feed's bookkeeping and without`,
        '',
        `${ROUNDS} rounds on one \`partner-service api\` and a dev server, no worker (only ingestion is measured). In each ` +
          `round ${WEBHOOKS} webhooks are POSTed with ${CONCURRENCY} in flight with migration 033's write-path bookkeeping ` +
          '(the `feed_xid` default, the `webhook_events_feed` index, the statement-level notify trigger) and ' +
          `${WEBHOOKS} without it (default '0', no trigger, no index); which goes first alternates. A rate is the ` +
          'webhooks over the time until the last 202.',
        '',
        table(
          ['ingestion', '>median rate', '>rate per round'],
          [
            ['without', `${median(rates.without).toFixed(1)}/s`, rates.without.map((r) => r.toFixed(0)).join(', ')],
            ['with', `${median(rates.with).toFixed(1)}/s`, rates.with.map((r) => r.toFixed(0)).join(', ')],
          ],
        ),
        '',
        `With ÷ without, the median of the rounds' ratios (${ratios.map((r) => r.toFixed(2)).join(', ')}): ` +
          `${ingestRatio.toFixed(3)} (goal ≥ ${INGEST_GOAL}: ${verdict(ingestRatio >= INGEST_GOAL)}).`,
        '',
        `### A reader catching up on ${CATCH_UP.toLocaleString('en')} events`,
        '',
        `${CATCH_UP.toLocaleString('en')} webhooks of one company (bodies in clear), read from the start in pages of ${PAGE}, ` +
          "each page's bodies opened and rendered as sent: through the feed's statement (store/webhooks/partner-feed.ts, " +
          'the horizon, the order by transaction, the lanes joined) and through a plain `SELECT … WHERE company_id = ? AND ' +
          'id > ? ORDER BY id` on an index of its own. Three rounds, alternating which goes first; medians.',
        '',
        table(
          ['reader', '>median time', '>events/s', '>per round'],
          (['feed', 'plain'] as const).map((kind) => [
            kind === 'feed' ? 'the feed' : 'plain ORDER BY id',
            `${(median(times[kind]) / 1000).toFixed(2)} s`,
            (CATCH_UP / (median(times[kind]) / 1000)).toFixed(0),
            times[kind].map((ms) => `${(ms / 1000).toFixed(2)} s`).join(', '),
          ]),
        ),
        '',
        `The feed ÷ plain, as throughput: ${catchUpRatio.toFixed(3)} (goal ≥ ${CATCH_UP_GOAL}: ${verdict(catchUpRatio >= CATCH_UP_GOAL)}).`,
      ].join('\n');
    }),
};
