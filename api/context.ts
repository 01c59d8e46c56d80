import type { FeedNotifier } from './partner/feed-notifier';
import type { Knex } from 'knex';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import type { TemporalGateway } from '../temporal/gateway';
import type { TokenChecker } from '../application/access/token-checker';
import type { ReadinessCheck } from './health';

/** What every route module receives: configuration, the database and the logger. */
export interface ApiDependencies {
  readonly config: Config;
  readonly knex: Knex;
  readonly logger: Logger;
  /** The internal API's way to Temporal; startApiServer makes (and closes) one when none is passed. */
  readonly temporalGateway?: TemporalGateway;
  /** Checks the internal API's tokens; startApiServer makes (and closes) one when none is passed. */
  readonly tokenChecker?: TokenChecker;
  /** The feed's long-poll wake-ups (one LISTEN connection); startApiServer makes (and closes) one. */
  readonly feedNotifier?: FeedNotifier;
  /** What /readyz checks beyond PostgreSQL: the worker's polling where this process runs one (`start`). */
  readonly readinessChecks?: readonly ReadinessCheck[];
}
