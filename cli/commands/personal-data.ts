import { dataAtRest } from '../../lib/at-rest';
import { subcommandOf, type Command } from '../command';
import { bootstrap, openMigratedDatabase } from '../bootstrap';
import { auditedCall } from '../../application/access/audit';
import { cliActor } from '../../lib/actor';
import { reindexSubjects } from '../../application/personal-data/index-keys';
import { UsageError } from '../../lib/errors';

const USAGE = [
  'Usage: partner-service personal-data reindex',
  '',
  'The subject index by which an erasure finds a person (docs/personal-data.md#index-keys).',
  '',
  '  reindex  moves every row with a body to the newest key of SUBJECT_INDEX_KEYS, in batches of 500 (one',
  '           short transaction each, beside ingestion), printing progress to stderr; then retires the older',
  '           keys no row uses, which processes may stop listing. Resumable: run it again after a kill.',
  '           Prints its summary as JSON. Exits 2 when this process lacks a key the deployment uses.',
].join('\n');

export const personalDataCommand: Command = {
  name: 'personal-data',
  auditActions: { reindex: ['personal_data.reindex'] },
  summary: 'Move the subject index to the newest SUBJECT_INDEX_KEYS key',
  usage: USAGE,
  async run(args, { verbose }) {
    const { rest, name } = subcommandOf(args, { reindex: true });
    if (rest.length) throw new UsageError(`${name} takes no arguments`);
    const runtime = bootstrap({ logsTo: 'stderr', verbose });
    try {
      const { knex } = await openMigratedDatabase(runtime);
      const atRest = dataAtRest(runtime.config);
      const what = { action: 'personal_data.reindex', target: atRest.subjectKeys[0]?.id ?? null } as const;
      const summary = await auditedCall(knex, { actor: cliActor() }, what, () =>
        reindexSubjects(knex, atRest, (done) => process.stderr.write(`reindexed ${done} rows\n`)),
      );
      process.stdout.write(`${JSON.stringify(summary)}\n`);
      return 0;
    } finally {
      await runtime.shutdown.shutdown();
    }
  },
};
