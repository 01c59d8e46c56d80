import { parseArgs } from 'node:util';
import { type Command } from '../command';
import { databaseSubcommands, type DatabaseAction } from '../bootstrap';
import { cliActor } from '../../lib/actor';
import { dataAtRest } from '../../lib/at-rest';
import type { BlockedDecision } from '../../lib/delivery';
import { UsageError } from '../../lib/errors';
import { createTemporalGateway } from '../../temporal/gateway';
import { orderingStatus } from '../../application/ordering/ordering-status';
import { decideBlockedKey } from '../../application/ordering/ordering-operator';

const USAGE = [
  'Usage: partner-service ordering status [--blocked] [--limit N]',
  '       partner-service ordering skip KEY',
  '       partner-service ordering retry KEY',
  '',
  'Per-entity ordering (WEBHOOK_ORDERING=entity, docs/partners.md "Order per entity").',
  '',
  '  status  prints, as JSON, each ordering key with an unsettled webhook, the longest-waiting first (100, or',
  '          --limit up to 1000; --blocked: only blocked keys): the head webhook, its state (attempting,',
  '          waiting, held, blocked, stopped) and attempts, how many webhooks wait behind it, how long the',
  '          oldest has waited, and the gaps.',
  '  skip    a blocked key (WEBHOOK_ORDERING_ON_FAILURE=block): its head ends as failed, a gap, and the key',
  '          goes on.',
  '  retry   a blocked key: its head makes one more attempt now; blocked again if it fails.',
].join('\n');

function status(args: string[]): DatabaseAction {
  const { values } = parseArgs({
    args,
    options: { limit: { type: 'string' }, blocked: { type: 'boolean', default: false } },
  });
  const query = {
    ...(values.limit !== undefined && { limit: values.limit }),
    ...(values.blocked && { blocked: 'true' }),
  };
  return (runtime, knex) => orderingStatus(knex, dataAtRest(runtime.config), query);
}

function decide(decision: BlockedDecision): (args: string[]) => DatabaseAction {
  return (args) => {
    if (args.length !== 1) throw new UsageError(`${decision} takes exactly one KEY`);
    return async (runtime, knex) => {
      const gateway = createTemporalGateway(runtime.config, runtime.logger);
      runtime.shutdown.add('temporal client', () => gateway.close());
      return decideBlockedKey(
        knex,
        dataAtRest(runtime.config),
        gateway,
        { actor: cliActor() },
        { key: args[0] },
        decision,
      );
    };
  };
}

export const orderingCommand: Command = databaseSubcommands(
  {
    name: 'ordering',
    summary: 'Show where ordered webhooks stand per key; skip or retry a blocked key',
    usage: USAGE,
    auditActions: { status: [], skip: ['ordering.skip'], retry: ['ordering.retry'] },
  },
  { status, skip: decide('skip'), retry: decide('retry') },
);
