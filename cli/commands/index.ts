import type { Command } from '../command';
import { apiCommand } from './api';
import { appsCommand } from './apps';
import { auditCommand } from './audit';
import { dbCommand } from './db';
import { eraseCommand } from './erase';
import { importCommand } from './import';
import { keysCommand } from './keys';
import { migrateCommand } from './migrate';
import { orderingCommand } from './ordering';
import { partnerCommand } from './partner';
import { personalDataCommand } from './personal-data';
import { portalCommand } from './portal';
import { retentionCommand } from './retention';
import { startCommand } from './start';
import { tokensCommand } from './tokens';
import { webhooksCommand } from './webhooks';
import { workerCommand } from './worker';

/** Every `partner-service` subcommand, in the order `--help` lists them. */
export const commands: readonly Command[] = [
  startCommand,
  apiCommand,
  workerCommand,
  migrateCommand,
  importCommand,
  appsCommand,
  portalCommand,
  webhooksCommand,
  orderingCommand,
  partnerCommand,
  tokensCommand,
  eraseCommand,
  personalDataCommand,
  keysCommand,
  retentionCommand,
  auditCommand,
  dbCommand,
];
