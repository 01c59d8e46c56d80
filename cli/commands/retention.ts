import type { Knex } from 'knex';
import { cliActor } from '../../lib/actor';
import type { Config } from '../../lib/config';
import { subcommandOf, type Command } from '../command';
import { bootstrap, openMigratedDatabase } from '../bootstrap';
import { retentionStatus, runRetentionNow } from '../../application/personal-data/retention';
import { UsageError } from '../../lib/errors';

const USAGE = [
  'Usage: partner-service retention status',
  '       partner-service retention run',
  '',
  'The retention purge of webhook bodies and delivery-log rows (docs/personal-data.md, "Retention").',
  '',
  '  status  prints the policy (WEBHOOK_PAYLOAD_RETENTION_DAYS, WEBHOOK_LOG_RETENTION_DAYS), the',
  '          schedule, the oldest body still stored and the last run with its counts, as JSON.',
  '  run     runs one purge at once, in this process, to the end, and prints its counts as JSON. The',
  '          hourly Temporal Schedule runs the same purge on its own. Also removes the audit rows older than',
  '          AUDIT_RETENTION_DAYS, oldest first, keeping the chain verifiable. Recorded in the audit trail as',
  '          retention.run (and audit.purge when audit rows go), as cli:<user>@<host>.',
].join('\n');

const ACTIONS = {
  status: (knex: Knex, config: Config) => retentionStatus(knex, config),
  run: (knex: Knex, config: Config) => runRetentionNow(knex, config, { actor: cliActor() }),
} as const;

export const retentionCommand: Command = {
  name: 'retention',
  auditActions: { status: [], run: ['retention.run', 'audit.purge'] },
  summary: 'Show the retention policy and runs, or run the purge now',
  usage: USAGE,
  async run(args, { verbose }) {
    const { subcommand: action, rest, name } = subcommandOf(args, ACTIONS);
    if (rest.length) throw new UsageError(`${name} takes no arguments`);
    const runtime = bootstrap({ logsTo: 'stderr', verbose });
    try {
      const database = await openMigratedDatabase(runtime);
      process.stdout.write(`${JSON.stringify(await action(database.knex, runtime.config))}\n`);
      return 0;
    } finally {
      await runtime.shutdown.shutdown();
    }
  },
};
