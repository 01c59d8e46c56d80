import type { Knex } from 'knex';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';

/** What every route module receives: configuration, the database and the logger. */
export interface ApiDependencies {
  readonly config: Config;
  readonly knex: Knex;
  readonly logger: Logger;
}
