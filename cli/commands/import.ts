import { parseArgs } from 'node:util';
import { type Command } from '../command';
import { bootstrap, openMigratedDatabase } from '../bootstrap';
import { cliActor } from '../../lib/actor';
import { importDirectoryFile } from '../../directory/import-directory';
import { UsageError } from '../../lib/errors';

export const importCommand: Command = {
  name: 'import',
  auditActions: { '': ['directory.import'] },
  summary: 'Import a directory snapshot (JSON) in one transaction',
  usage: [
    'Usage: partner-service import FILE [--replace]',
    '',
    'Upserts companies, jobs, users, memberships, groups and apps from FILE by id, in one transaction.',
    'Invalid input writes nothing and prints one line per problem, each naming its JSON path.',
    '',
    'Options:',
    '  --replace  make FILE the whole truth: delete rows of the sections FILE contains that FILE does not list',
  ].join('\n'),
  async run(args, { verbose }) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: { replace: { type: 'boolean', default: false } },
    });
    if (positionals.length !== 1) throw new UsageError('expected exactly one FILE');
    const runtime = bootstrap({ logsTo: 'stderr', verbose });
    const database = await openMigratedDatabase(runtime);
    try {
      const summary = await importDirectoryFile(database.knex, positionals[0], {
        replace: values.replace,
        who: { actor: cliActor() },
      });
      process.stdout.write(`${JSON.stringify(summary)}\n`);
      return 0;
    } finally {
      await runtime.shutdown.shutdown();
    }
  },
};
