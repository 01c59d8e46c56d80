import type { Knex } from 'knex';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import type { WebhookStarter } from '../client/temporal-starter';

/** What every route module receives: configuration, the database and the logger. */
export interface ApiDependencies {
  readonly config: Config;
  readonly knex: Knex;
  readonly logger: Logger;
  /** Starts webhook workflows for the internal API; created lazily from the config when absent. */
  readonly webhookStarter?: WebhookStarter;
}
