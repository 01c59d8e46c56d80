import { parseArgs } from 'node:util';
import { subcommandOf, UsageError, type Command } from '../command';
import { printDatabaseAction } from '../bootstrap';
import { readAuditTrail } from '../../application/audit-log';

const USAGE = [
  'Usage: partner-service audit list [--since ISO] [--actor NAME] [--action ACTION] [--limit N] [--cursor C]',
  '',
  'The audit trail: every change an operator made, through the internal API or the CLI (docs/operations.md,',
  '"Audit trail: reading it"). Read only: no command changes or deletes a row.',
  '',
  '  list  prints one page, newest first, as JSON with next_cursor (give it to --cursor for the next page).',
  '        --since: at or after (ISO 8601 with a time zone); --actor: exactly this actor (a token\'s name,',
  '        INTERNAL_API_TOKEN or cli:<user>@<host>); --action: one of partner.pause, partner.resume,',
  '        partner.limit, webhook.cancel, webhook.retry_now, webhook.redeliver, webhooks.redeliver,',
  '        erasure.request, token.create, token.revoke; --limit: 1 to 500, 50 by default.',
  '',
  'A bad flag or value: one line, exit 2.',
].join('\n');

/** The flags, named as GET /internal/v1/audit's query names them, so one parser checks both. */
function listQuery(args: string[]): Record<string, string> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { since: { type: 'string' }, actor: { type: 'string' }, action: { type: 'string' }, limit: { type: 'string' }, cursor: { type: 'string' } },
  });
  if (positionals.length) throw new UsageError(`list takes flags, not ${JSON.stringify(positionals[0])}`);
  return Object.fromEntries(Object.entries(values).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

export const auditCommand: Command = {
  name: 'audit',
  summary: "List the audit trail of operators' changes",
  usage: USAGE,
  async run(args, { verbose }) {
    const { rest } = subcommandOf(args, { list: true });
    const query = listQuery(rest);
    return printDatabaseAction(verbose, async (_runtime, knex) => {
      const page = await readAuditTrail(knex, query);
      return { next_cursor: page.nextCursor, results: page.events };
    });
  },
};
