import { parseArgs } from 'node:util';
import { type Command } from '../command';
import { databaseSubcommands, type DatabaseAction } from '../bootstrap';
import { cliActor } from '../../lib/actor';
import { createApiToken, listTokens, parseTokenRequest, revokeApiTokenNamed } from '../../application/access/tokens';
import { UsageError } from '../../lib/errors';

const USAGE = [
  'Usage: partner-service tokens create --name NAME --scope SCOPE[,SCOPE...] [--expires-in DURATION]',
  '       partner-service tokens list',
  '       partner-service tokens revoke NAME',
  '',
  'Manages the named tokens of the internal API and the codec server (docs/access.md, "Tokens and scopes").',
  '',
  '  create  creates a token with the given scopes (ingest, read, operate, erase, decode) and prints it as JSON with',
  '          its name, scopes and expiry. The token is shown only this once: only a salted hash is stored.',
  '          --expires-in: a positive number of days, hours or minutes (90d, 12h, 30m); none: no expiry.',
  '  list    prints every token, revoked ones too, as JSON: name, scopes, created, last used, expiry and',
  '          revocation (never the token).',
  '  revoke  revokes a token: every api process refuses it within 5 s. Its name is never reused.',
  '',
  'Each create and revoke is recorded in the audit trail, as cli:<user>@<host>. Exits 2 with one line for a',
  'name that exists (live or revoked) or is not valid, an unknown scope, a bad expiry, or revoking a name',
  'that has no live token; nothing is created or revoked then.',
].join('\n');

/** Parsed arguments bound to the database work they call for; parsing happens before the database opens. */
function create(args: string[]): DatabaseAction {
  const { values } = parseArgs({
    args,
    options: { name: { type: 'string' }, scope: { type: 'string' }, 'expires-in': { type: 'string' } },
  });
  const request = parseTokenRequest({ name: values.name, scopes: values.scope, expiresIn: values['expires-in'] });
  return async (_runtime, knex) => {
    const created = await createApiToken(knex, { actor: cliActor() }, request);
    // A warning that matters, not a log line: it shows at every log level, and never on stdout.
    process.stderr.write('Store the token now: it cannot be shown again.\n');
    return created;
  };
}

function list(args: string[]): DatabaseAction {
  if (args.length) throw new UsageError('list takes no arguments');
  return (_runtime, knex) => listTokens(knex);
}

function revoke(args: string[]): DatabaseAction {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals.length !== 1) throw new UsageError('expected exactly one NAME');
  return (_runtime, knex) => revokeApiTokenNamed(knex, { actor: cliActor() }, positionals[0]);
}

export const tokensCommand: Command = databaseSubcommands(
  {
    name: 'tokens',
    summary: 'Create, list and revoke the named, scoped tokens of the internal API',
    usage: USAGE,
    auditActions: { create: ['token.create'], list: [], revoke: ['token.revoke'] },
  },
  { create, list, revoke },
);
