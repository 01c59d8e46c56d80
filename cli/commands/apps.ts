import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import { subcommandOf, type Command } from '../command';
import { bootstrap, openMigratedDatabase } from '../bootstrap';
import {
  createPartnerApp,
  listPartnerApps,
  newAppId,
  revokePartnerApp,
  setAppScopes,
  type AppSummary,
} from '../apps-store';
import { auditedChange } from '../../application/access/audit';
import { cliActor } from '../../lib/actor';
import { UsageError, CommandFailure } from '../../lib/errors';
import { APP_SCOPES, DEFAULT_APP_SCOPES, type AppScope } from '../../lib/vocabulary';

const USAGE = [
  'Usage: partner-service apps create --name NAME --company ID [--company ID...] [--scope SCOPE...] [--json]',
  '       partner-service apps list [--json]',
  '       partner-service apps scopes APP_ID --scope SCOPE [--scope SCOPE...]',
  '       partner-service apps revoke APP_ID',
  '',
  'Manages the partner apps that call the REST user listings and the partner API (/partner/v1) with X-App-Id',
  'and X-App-Key.',
  '',
  '  create  creates an app that may read the given companies (and their jobs); prints its id and a new',
  '          key. The key is shown only this once: only a salted hash of it is stored.',
  '  list    prints every app with its status, scopes and companies (never keys).',
  "  scopes  replaces an app's scopes; its next request is checked against them.",
  '  revoke  revokes an app; its next request gets 403.',
  '',
  `Scopes: ${APP_SCOPES.join(', ')} (repeat --scope; without it, ${DEFAULT_APP_SCOPES.join(', ')}).`,
].join('\n');

/** The --scope values, each one of APP_SCOPES, without repeats; none given: `fallback`. */
function scopesOf(values: readonly string[] | undefined, fallback?: readonly AppScope[]): AppScope[] {
  if (!values?.length) {
    if (fallback) return [...fallback];
    throw new UsageError('at least one --scope is required');
  }
  const unknown = values.filter((value) => !(APP_SCOPES as readonly string[]).includes(value));
  if (unknown.length)
    throw new UsageError(`unknown scope ${JSON.stringify(unknown[0])}: expected one of ${APP_SCOPES.join(', ')}`);
  return [...new Set(values as AppScope[])];
}

/** Parsed arguments bound to the database work they call for; parsing happens before the database opens. */
type Action = (knex: Knex) => Promise<number>;

const write = (text: string) => process.stdout.write(`${text}\n`);

function create(args: string[]): Action {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      company: { type: 'string', multiple: true },
      scope: { type: 'string', multiple: true },
      json: { type: 'boolean', default: false },
    },
  });
  const name = values.name?.trim();
  if (!name) throw new UsageError('--name is required');
  const companies = values.company ?? [];
  if (!companies.length) throw new UsageError('at least one --company is required');
  const scopes = scopesOf(values.scope, DEFAULT_APP_SCOPES);
  return async (knex) => {
    const appId = newAppId();
    const what = { action: 'app.create', target: appId, parameters: { name, companies, scopes } } as const;
    const { appKey } = await auditedChange(knex, { actor: cliActor() }, what, (trx) =>
      createPartnerApp(trx, name, companies, appId, scopes),
    );
    write(values.json ? JSON.stringify({ app_id: appId, app_key: appKey }) : `app_id: ${appId}\napp_key: ${appKey}`);
    // A warning that matters, not a log line: it shows at every log level, and never on stdout.
    process.stderr.write('Store the key now: it cannot be shown again.\n');
    return 0;
  };
}

const formatApp = (app: AppSummary) =>
  [app.app_id, app.status, app.created_at.toISOString(), app.scopes.join(','), app.companies.join(','), app.name].join(
    '\t',
  );

function list(args: string[]): Action {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } } });
  return async (knex) => {
    const apps = await listPartnerApps(knex);
    write(
      values.json
        ? JSON.stringify(apps)
        : ['APP_ID\tSTATUS\tCREATED\tSCOPES\tCOMPANIES\tNAME', ...apps.map(formatApp)].join('\n'),
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

function scopes(args: string[]): Action {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { scope: { type: 'string', multiple: true } },
  });
  if (positionals.length !== 1) throw new UsageError('expected exactly one APP_ID');
  const [appId] = positionals;
  const granted = scopesOf(values.scope);
  return async (knex) => {
    const what = { action: 'app.scopes', target: appId, parameters: { scopes: granted } } as const;
    await auditedChange(knex, { actor: cliActor() }, what, async (trx) => {
      if (!(await setAppScopes(trx, appId, granted)))
        throw new CommandFailure(`partner-service apps scopes: no active app ${JSON.stringify(appId)}`);
    });
    write(`${appId}: ${granted.join(', ')}`);
    return 0;
  };
}

const SUBCOMMANDS: Record<string, (args: string[]) => Action> = { create, list, scopes, revoke };

export const appsCommand: Command = {
  name: 'apps',
  auditActions: { create: ['app.create'], list: [], scopes: ['app.scopes'], revoke: ['app.revoke'] },
  summary: 'Create, list, scope and revoke the partner apps of the listings and the partner API',
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
