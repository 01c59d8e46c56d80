import { parseArgs } from 'node:util';
import {
  createOperatorPortalLink,
  PORTAL_LINK_MAX_TTL_SECONDS,
  portalLinkUrl,
} from '../../application/access/portal-sessions';
import { cliActor } from '../../lib/actor';
import { CommandFailure, UsageError } from '../../lib/errors';
import { bootstrap, openMigratedDatabase } from '../bootstrap';
import { subcommandOf, type Command } from '../command';

const USAGE = [
  'Usage: partner-service portal link --app APP_ID [--ttl SECONDS] [--scope SCOPE...] [--json]',
  '',
  "Prints a one-time link to the partner portal for an app, to send to the partner's person. It opens once,",
  `within --ttl seconds (60 to ${PORTAL_LINK_MAX_TTL_SECONDS}, by default ${PORTAL_LINK_MAX_TTL_SECONDS}),`,
  "a session of at most an hour with --scope's scopes (each one the app holds; by default all of the app's).",
  'The link starts with PORTAL_BASE_URL (default http://localhost:PORT). Audited as portal.link.',
].join('\n');

function link(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      app: { type: 'string' },
      ttl: { type: 'string' },
      scope: { type: 'string', multiple: true },
      json: { type: 'boolean', default: false },
    },
  });
  const appId = values.app;
  if (!appId) throw new UsageError('--app is required');
  const ttl = values.ttl === undefined ? undefined : Number(values.ttl);
  if (ttl !== undefined && !Number.isInteger(ttl)) throw new UsageError('--ttl must be a whole number of seconds');
  return { appId, body: { ttl_seconds: ttl, scopes: values.scope }, json: values.json };
}

const SUBCOMMANDS = { link };

export const portalCommand: Command = {
  name: 'portal',
  auditActions: { link: ['portal.link'] },
  summary: 'Make a one-time link to the partner portal for an app',
  usage: USAGE,
  async run(args, { verbose }) {
    const { subcommand, rest } = subcommandOf(args, SUBCOMMANDS);
    const { appId, body, json } = subcommand(rest);
    const runtime = bootstrap({ logsTo: 'stderr', verbose });
    const database = await openMigratedDatabase(runtime);
    try {
      const made = await createOperatorPortalLink(database.knex, { actor: cliActor() }, appId, body);
      if (!made) throw new CommandFailure(`partner-service portal link: no active app ${JSON.stringify(appId)}`);
      const base = runtime.config.PORTAL_BASE_URL ?? `http://localhost:${runtime.config.PORT}`;
      const url = portalLinkUrl(base.replace(/\/$/, ''), made.token);
      const expiresAt = made.expiresAt.toISOString();
      process.stdout.write(
        json
          ? `${JSON.stringify({ url, expires_at: expiresAt, scopes: made.scopes })}\n`
          : `${url}\nexpires at ${expiresAt}\n`,
      );
      return 0;
    } finally {
      await runtime.shutdown.shutdown();
    }
  },
};
