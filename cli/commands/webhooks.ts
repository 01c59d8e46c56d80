import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { type Command } from '../command';
import { bootstrap, openMigratedDatabase, type Runtime } from '../bootstrap';
import { dataAtRest } from '../../lib/at-rest';
import { partnerSettings } from '../../lib/config';
import { isCanonicalUuid } from '../../lib/validation';
import { describeJsonSyntaxError } from '../../lib/describe-error';
import { parseBulkRedelivery } from '../../application/webhooks/webhook-filter';
import { readDeliveryLog } from '../../application/webhooks/delivery-log';
import { previewRedelivery } from '../../application/webhooks/redelivery-preview';
import {
  cancelWebhook,
  redeliverMatching,
  redeliverWebhook,
  retryWebhookNow,
} from '../../application/webhooks/webhook-operations';
import { webhookStatus } from '../../application/webhooks/webhook-status';
import { acceptWebhook } from '../../application/ingestion/ingest';
import { sendTestWebhook } from '../send-test';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { createTemporalGateway } from '../../temporal/gateway';
import { cliActor } from '../../lib/actor';
import { auditedCall } from '../../application/access/audit';
import { UsageError, NotFoundError, CommandFailure } from '../../lib/errors';

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

const USAGE = [
  'Usage: partner-service webhooks send FILE.json',
  '       partner-service webhooks send-test FILE.json',
  '       partner-service webhooks list [FILTERS] [--limit N] [--cursor C]',
  '       partner-service webhooks show WEBHOOK_ID',
  '       partner-service webhooks retry-now WEBHOOK_ID',
  '       partner-service webhooks cancel WEBHOOK_ID',
  '       partner-service webhooks redeliver WEBHOOK_ID [--allow-expired-links]',
  '       partner-service webhooks redeliver --all [FILTERS] [--limit N] [--allow-expired-links] [--dry-run]',
  '',
  'FILE.json holds {"event_id"?, "event_type", "action", "data"}, as POST /internal/v1/webhooks takes it.',
  'FILTERS: --status S --event-type T --action A --company-id C --since ISO --until ISO, as the',
  'query of GET /internal/v1/webhooks (docs/webhooks.md, "Operating deliveries").',
  '',
  '  send       validates the event and starts its delivery workflow on Temporal, exactly like the',
  '             internal API (event_id is the idempotency key). Prints the webhook as JSON.',
  '  send-test  validates the event and runs exactly one attempt against PARTNER_ENDPOINT, without',
  '             Temporal. Records it marked as a test (with a fresh test-… event id) and prints the',
  '             outcome as JSON. Exits 0 on a 2XX answer and 1 otherwise.',
  '  list       prints one page of the delivery log, newest first, as JSON with next_cursor.',
  '  show       prints one webhook: its event, every attempt and the live state.',
  '  retry-now  makes the next attempt of a waiting delivery at once (recorded as manual).',
  '  cancel     stops a pending delivery; it is recorded as cancelled.',
  '  redeliver  starts a new delivery of a finished webhook with the same webhook-id header; with',
  '             --all, of every finished webhook matching FILTERS (a repeated identical call starts',
  '             nothing new). Prints the count started and whether matches are left (more).',
  '             An event whose signed links (candidate files 24 h, file answers 2 h after acceptance)',
  '             are past their deadline is refused (exit 1), or skipped and counted by --all',
  '             (skipped_expired_links), unless --allow-expired-links is given. A webhook whose',
  '             body was removed (retention, erasure) is refused (exit 1), or skipped and counted',
  '             by --all (skipped_payload_removed). --all --dry-run starts nothing: it prints what the',
  '             same call would do now, {"dry_run":true,"would_start":N,"skipped_expired_links":E,',
  '             "skipped_payload_removed":P,"more":B}.',
  '',
  "Operations exit 1 when the webhook does not exist or is in the wrong state (the API's 404 and 409).",
].join('\n');

async function readEventFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${file} is not valid JSON: ${describeJsonSyntaxError(error)}`);
  }
}

async function send(runtime: Runtime, event: unknown): Promise<number> {
  const prepared = prepareWebhook(event, runtime.config.PARTNER_TIMEOUT_MS, runtime.config.WEBHOOK_ORDERING);
  const database = await openMigratedDatabase(runtime);
  const gateway = createTemporalGateway(runtime.config, runtime.logger);
  runtime.shutdown.add('temporal client', () => gateway.close());
  const what = {
    action: 'webhook.send',
    target: prepared.webhookId,
    parameters: { event_type: prepared.event.event_type, action: prepared.event.action },
  } as const;
  const { webhookId, eventId, workflowId, runId, started } = await auditedCall(
    database.knex,
    { actor: cliActor() },
    what,
    () => acceptWebhook(database.knex, dataAtRest(runtime.config), gateway, prepared),
  );
  print({
    status: started ? 'accepted' : 'existing',
    webhook_id: webhookId,
    event_id: eventId,
    workflow_id: workflowId,
    run_id: runId,
  });
  return 0;
}

async function sendTest(runtime: Runtime, event: unknown): Promise<number> {
  const prepared = prepareWebhook(event);
  const settings = partnerSettings(runtime.config);
  if ('missing' in settings)
    throw new CommandFailure(`${settings.missing} is not set: there is no partner endpoint to test`);
  const database = await openMigratedDatabase(runtime);
  // stdout carries the outcome JSON alone; the attempt's own log line would repeat it.
  const what = {
    action: 'webhook.send_test',
    target: null,
    parameters: { event_type: prepared.event.event_type, action: prepared.event.action },
  } as const;
  const report = await auditedCall(database.knex, { actor: cliActor() }, what, () =>
    sendTestWebhook(runtime.config, database.knex, runtime.logger.child({}, { level: 'error' }), event),
  );
  print(report);
  return report.succeeded ? 0 : 1;
}

const FILTER_OPTIONS = {
  status: { type: 'string' },
  'event-type': { type: 'string' },
  action: { type: 'string' },
  'company-id': { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
} as const;

/** Flags as the API's query names them, so one parser validates both. */
function filterFlags(args: string[], extra: { cursor?: true; redeliver?: true } = {}) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      ...FILTER_OPTIONS,
      ...(extra.cursor && { cursor: { type: 'string' } }),
      ...(extra.redeliver && {
        all: { type: 'boolean' },
        'allow-expired-links': { type: 'boolean' },
        'dry-run': { type: 'boolean' },
      }),
    },
  });
  const {
    'event-type': eventType,
    'company-id': companyId,
    all,
    'allow-expired-links': allowExpiredLinks,
    'dry-run': dryRun,
    ...rest
  } = values as Record<string, string | boolean | undefined>;
  const query = Object.fromEntries(
    Object.entries({ ...rest, event_type: eventType, company_id: companyId }).filter(([, v]) => v !== undefined),
  );
  return {
    query,
    positionals,
    all: all === true,
    allowExpiredLinks: allowExpiredLinks === true,
    dryRun: dryRun === true,
  };
}

/** list, show, retry-now, cancel, redeliver: the operations of the internal API, on the same code. */
async function operate(runtime: Runtime, action: string, args: string[]): Promise<number> {
  const { query, positionals, all, allowExpiredLinks, dryRun } = filterFlags(args, {
    cursor: action === 'list' || undefined,
    redeliver: action === 'redeliver' || undefined,
  });
  const single = action !== 'list' && !(action === 'redeliver' && all);
  if (single && (positionals.length !== 1 || Object.keys(query).length))
    throw new UsageError(`${action} takes exactly one WEBHOOK_ID`);
  if (!single && positionals.length)
    throw new UsageError(`${action} ${all ? '--all ' : ''}takes filters, not a WEBHOOK_ID`);
  if (dryRun && single) throw new UsageError('--dry-run previews a bulk redelivery: it goes with --all');
  const [webhookId] = positionals;
  if (single && !isCanonicalUuid(webhookId)) throw new NotFoundError('webhook', webhookId);
  const database = await openMigratedDatabase(runtime);
  const { knex } = database;
  const gateway = createTemporalGateway(runtime.config, runtime.logger);
  runtime.shutdown.add('temporal client', () => gateway.close());
  const sendTimeoutMs = runtime.config.PARTNER_TIMEOUT_MS;
  const atRest = dataAtRest(runtime.config);
  const operator = { actor: cliActor() };
  switch (action) {
    case 'list': {
      const page = await readDeliveryLog(knex, query);
      print({ next_cursor: page.nextCursor, results: page.webhooks });
      return 0;
    }
    case 'show': {
      const view = await webhookStatus(knex, atRest, gateway, webhookId);
      if (!view) throw new NotFoundError('webhook', webhookId);
      print(view);
      return 0;
    }
    case 'retry-now':
      print({ webhook_id: webhookId, ...(await retryWebhookNow(knex, gateway, operator, webhookId)) });
      return 0;
    case 'cancel':
      await cancelWebhook(knex, gateway, operator, webhookId);
      print({ webhook_id: webhookId, status: 'cancel requested' });
      return 0;
    default: {
      if (all) {
        const { filter, limit } = parseBulkRedelivery(query);
        const options = { sendTimeoutMs, atRest, limit, allowExpiredLinks };
        print(
          await (dryRun
            ? previewRedelivery(knex, operator, filter, options)
            : redeliverMatching(knex, gateway, operator, filter, options)),
        );
        return 0;
      }
      const redelivery = await redeliverWebhook(knex, gateway, operator, webhookId, {
        sendTimeoutMs,
        atRest,
        allowExpiredLinks,
      });
      print({
        webhook_id: redelivery.webhookId,
        redelivery_of: redelivery.redeliveryOf,
        workflow_id: redelivery.workflowId,
        run_id: redelivery.runId,
      });
      return 0;
    }
  }
}

const OPERATIONS = ['list', 'show', 'retry-now', 'cancel', 'redeliver'];

export const webhooksCommand: Command = {
  name: 'webhooks',
  auditActions: {
    send: ['webhook.send'],
    'send-test': ['webhook.send_test'],
    list: [],
    show: [],
    'retry-now': ['webhook.retry_now'],
    cancel: ['webhook.cancel'],
    redeliver: ['webhook.redeliver', 'webhooks.redeliver'],
  },
  summary: 'Start, test, list, show, retry, cancel and redeliver webhooks',
  usage: USAGE,
  async run(args, { verbose }) {
    const [action, file, ...rest] = args;
    let body: (runtime: Runtime) => Promise<number>;
    if (OPERATIONS.includes(action)) {
      body = (runtime) => operate(runtime, action, args.slice(1));
    } else {
      if (action !== 'send' && action !== 'send-test')
        throw new UsageError(`expected send, send-test, ${OPERATIONS.join(', ')}`);
      if (!file || rest.length) throw new UsageError('expected exactly one FILE.json');
      const event = await readEventFile(file);
      body = (runtime) => (action === 'send' ? send(runtime, event) : sendTest(runtime, event));
    }
    const runtime = bootstrap({ logsTo: 'stderr', verbose });
    try {
      return await body(runtime);
    } finally {
      await runtime.shutdown.shutdown();
    }
  },
};
