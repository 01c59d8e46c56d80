import { parseArgs } from 'node:util';
import { subcommandOf, type Command } from '../command';
import { printDatabaseAction } from '../bootstrap';
import { readAuditTrail } from '../../application/access/audit-log';
import { verifyAuditTrail } from '../../application/access/audit-verify';
import { UsageError } from '../../lib/errors';

const USAGE = [
  'Usage: partner-service audit list [--since ISO] [--actor NAME] [--action ACTION] [--unsettled] [--limit N] ' +
    '[--cursor C]',
  '       partner-service audit verify',
  '',
  'The audit trail: every change an operator made, through the internal API or the CLI (docs/access.md,',
  '"Audit trail"). Read only: no command changes or deletes a row.',
  '',
  '  list  prints one page, newest first, as JSON with next_cursor (give it to --cursor for the next page).',
  "        --since: at or after (ISO 8601 with a time zone); --actor: exactly this actor (a token's name,",
  '        INTERNAL_API_TOKEN or cli:<user>@<host>); --action: one of partner.pause, partner.resume,',
  '        partner.limit, webhook.cancel, webhook.retry_now, webhook.redeliver, webhooks.redeliver,',
  '        erasure.request, token.create, token.revoke, keys.reseal, personal_data.reindex, retention.run,',
  '        audit.purge, app.create, app.revoke, directory.import, webhook.send, webhook.send_test;',
  '        --unsettled: only intents whose outcome was never recorded; --limit: 1 to 500, 50 by default.',
  '  verify  walks the hash chain from the anchor (the last row purged) to the head, recomputing every hash,',
  '        and prints the report as JSON: every row missing, edited or out of place, with its position.',
  '        Exits 0 when intact, 1 when not.',
  '',
  'A bad flag or value: one line, exit 2.',
].join('\n');

/** The flags, named as GET /internal/v1/audit's query names them, so one parser checks both. */
function listQuery(args: string[]): Record<string, string> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      since: { type: 'string' },
      actor: { type: 'string' },
      action: { type: 'string' },
      unsettled: { type: 'boolean' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
    },
  });
  if (positionals.length) throw new UsageError(`list takes flags, not ${JSON.stringify(positionals[0])}`);
  return Object.fromEntries(
    Object.entries(values).flatMap(([name, value]) => (value === undefined ? [] : [[name, String(value)]])),
  );
}

export const auditCommand: Command = {
  name: 'audit',
  auditActions: { list: [], verify: [] },
  summary: "List the audit trail of operators' changes, or verify its hash chain",
  usage: USAGE,
  async run(args, { verbose }) {
    const { rest, name } = subcommandOf(args, { list: true, verify: true });
    if (name === 'verify') {
      if (rest.length) throw new UsageError('verify takes no arguments');
      let intact = false;
      const code = await printDatabaseAction(verbose, async (_runtime, knex) => {
        const report = await verifyAuditTrail(knex);
        intact = report.intact;
        return report;
      });
      return code === 0 && !intact ? 1 : code;
    }
    const query = listQuery(rest);
    return printDatabaseAction(verbose, async (_runtime, knex) => {
      const page = await readAuditTrail(knex, query);
      return { next_cursor: page.nextCursor, results: page.events };
    });
  },
};
