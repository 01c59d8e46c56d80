import { parseArgs } from 'node:util';
import { type Command } from '../command';
import { databaseSubcommands } from '../bootstrap';
import { dataAtRest } from '../../lib/at-rest';
import { orderingStatus } from '../../application/ordering/ordering-status';

const USAGE = [
  'Usage: partner-service ordering status [--limit N]',
  '',
  'Per-entity ordering (WEBHOOK_ORDERING=entity, docs/partners.md "Order per entity").',
  '',
  '  status  prints, as JSON, each ordering key with an unsettled webhook, the longest-waiting first (100, or',
  '          --limit up to 1000): the head webhook, its state (attempting, waiting, held, stopped) and',
  '          attempts, how many webhooks wait behind it, how long the oldest has waited, and the gaps.',
].join('\n');

export const orderingCommand: Command = databaseSubcommands(
  { name: 'ordering', summary: 'Show where ordered webhooks stand, per key', usage: USAGE, auditActions: { status: [] } },
  {
    status: (args: string[]) => {
      const { values } = parseArgs({ args, options: { limit: { type: 'string' } } });
      return (runtime, knex) => orderingStatus(knex, dataAtRest(runtime.config), values.limit === undefined ? {} : { limit: values.limit });
    },
  },
);
