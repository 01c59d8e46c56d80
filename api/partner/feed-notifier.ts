import { Client } from 'pg';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { FeedWakeups } from '../../application/webhooks/partner-feed';

// The long poll's one wake-up path per api process (docs/partners.md, "The feed"): a single connection LISTENs on
// `partner_feed` (migration 033's trigger notifies it when an INSERT into webhook_events commits) and wakes every
// waiting reader at once. A notified row may not be readable yet (an older transaction still runs), so a reader that
// finds nothing asks for one more wake-up a little later: one timer for the process, not one per reader.

const CHANNEL = 'partner_feed';
/** How soon a reader that found nothing after a notification reads again. */
const AGAIN_MS = 200;

export interface FeedNotifier extends FeedWakeups {
  close(): Promise<void>;
}

export function createFeedNotifier(knex: Knex, logger: Logger): FeedNotifier {
  const waiters = new Set<() => void>();
  let client: Client | undefined;
  let connecting: Promise<void> | undefined;
  let againTimer: NodeJS.Timeout | undefined;
  let closed = false;

  const wakeAll = () => {
    const woken = [...waiters];
    waiters.clear();
    for (const wake of woken) wake();
  };

  const connect = () => {
    connecting ??= (async () => {
      const { connectionString } = knex.client.config.connection as { connectionString: string };
      const listener = new Client({ connectionString });
      listener.on('notification', wakeAll);
      listener.on('error', (error) => {
        logger.warn({ err: error }, 'the feed notification connection failed: long polls wait out their time');
        client = undefined;
        connecting = undefined;
        void listener.end().catch(() => {});
      });
      await listener.connect();
      await listener.query(`LISTEN ${CHANNEL}`);
      client = listener;
    })().catch((error: unknown) => {
      logger.warn({ err: error }, 'the feed notification connection could not open: long polls wait out their time');
      connecting = undefined;
    });
    return connecting;
  };

  return {
    async next(deadline) {
      if (closed) return;
      await connect();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
        function done() {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        }
        waiters.add(done);
      });
    },
    again() {
      againTimer ??= setTimeout(() => {
        againTimer = undefined;
        wakeAll();
      }, AGAIN_MS);
    },
    async close() {
      closed = true;
      clearTimeout(againTimer);
      wakeAll();
      await client?.end().catch(() => {});
    },
  };
}
