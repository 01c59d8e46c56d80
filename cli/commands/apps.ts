import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import { subcommandOf, type Command } from '../command';
import { bootstrap, openMigratedDatabase } from '../bootstrap';
import { createPartnerApp, listPartnerApps, newAppId, revokePartnerApp, type AppSummary } from '../apps-store';
import { auditedChange } from '../../application/access/audit';
import { cliActor } from '../../lib/actor';
import { UsageError, CommandFailure } from '../../lib/errors';

const USAGE = [
  'Usage: partner-service apps create --name NAME --company ID [--company ID...] [--json]',
  '       partner-service apps list [--json]',
  '       partner-service apps revoke APP_ID',
  '',
  'Manages the partner apps that call the REST user listings with X-App-Id and X-App-Key.',
  '',
  '  create  creates an app that may read the given companies (and their jobs); prints its id and a new',
  '          key. The key is shown only this once: only a salted hash of it is stored.',
  '  list    prints every app with its status and companies (never keys).',
  '  revoke  revokes an app; its next request gets 403.',
].join('\n');

/** Parsed arguments bound to the database work they call for; parsing happens before the database opens. */
type Action = (knex: Knex) => Promise<number>;

const write = (text: string) => process.stdout.write(`${text}\n`);

function create(args: string[]): Action {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      company: { type: 'string', multiple: true },
      json: { type: 'boolean', default: false },
    },
  });
  const name = values.name?.trim();
  if (!name) throw new UsageError('--name is required');
  const companies = values.company ?? [];
  if (!companies.length) throw new UsageError('at least one --company is required');
  return async (knex) => {
    const appId = newAppId();
    const what = { action: 'app.create', target: appId, parameters: { name, companies } } as const;
    const { appKey } = await auditedChange(knex, { actor: cliActor() }, what, (trx) =>
      createPartnerApp(trx, name, companies, appId),
    );
    write(values.json ? JSON.stringify({ app_id: appId, app_key: appKey }) : `app_id: ${appId}\napp_key: ${appKey}`);
    // A warning that matters, not a log line: it shows at every log level, and never on stdout.
    process.stderr.write('Store the key now: it cannot be shown again.\n');
    return 0;
  };
}

const formatApp = (app: AppSummary) =>
  [app.app_id, app.status, app.created_at.toISOString(), app.companies.join(','), app.name].join('\t');

function list(args: string[]): Action {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } } });
  return async (knex) => {
    const apps = await listPartnerApps(knex);
    write(
      values.json
        ? JSON.stringify(apps)
        : ['APP_ID\tSTATUS\tCREATED\tCOMPANIES\tNAME', ...apps.map(formatApp)].join('\n'),
    );
    return 0;
  };
}

function revoke(args: string[]): Action {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals.length !== 1) throw new UsageError('expected exactly one APP_ID');
  const [appId] = positionals;
  return async (knex) => {
    const outcome = await auditedChange(
      knex,
      { actor: cliActor() },
      { action: 'app.revoke', target: appId },
      async (trx) => {
        const revoked = await revokePartnerApp(trx, appId);
        if (revoked === 'unknown')
          throw new CommandFailure(`partner-service apps revoke: no app ${JSON.stringify(appId)}`);
        return revoked;
      },
    );
    write(outcome === 'revoked' ? `revoked ${appId}` : `${appId} was already revoked`);
    return 0;
  };
}

const SUBCOMMANDS: Record<string, (args: string[]) => Action> = { create, list, revoke };

export const appsCommand: Command = {
  name: 'apps',
  auditActions: { create: ['app.create'], list: [], revoke: ['app.revoke'] },
  summary: 'Create, list and revoke the partner apps of the REST user listings',
  usage: USAGE,
  async run(args, { verbose }) {
    const { subcommand, rest } = subcommandOf(args, SUBCOMMANDS);
    const action = subcommand(rest);
    const runtime = bootstrap({ logsTo: 'stderr', verbose });
    const database = await openMigratedDatabase(runtime);
    try {
      return await action(database.knex);
    } finally {
      await runtime.shutdown.shutdown();
    }
  },
};
