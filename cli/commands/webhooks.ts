import { readFile } from 'node:fs/promises';
import { UsageError, type Command } from '../command';
import { bootstrap, openMigratedDatabase, type Runtime } from '../bootstrap';
import { partnerSettings } from '../../lib/config';
import { formatPathError } from '../../lib/validation';
import { acceptWebhook } from '../../client/ingest';
import { sendTestWebhook } from '../send-test';
import { prepareWebhook, WebhookValidationError } from '../../client/start-webhook';
import { createTemporalStarter, TemporalUnavailableError } from '../../client/temporal-starter';
import { TemporalSetupError } from '../../temporal/register-search-attributes';

const USAGE = [
  'Usage: partner-service webhooks send FILE.json',
  '       partner-service webhooks send-test FILE.json',
  '',
  'FILE.json holds {"event_id"?, "event_type", "action", "data"}, as POST /internal/v1/webhooks takes it.',
  '',
  '  send       validates the event and starts its delivery workflow on Temporal, exactly like the',
  '             internal API (event_id is the idempotency key). Prints the webhook as JSON.',
  '  send-test  validates the event and runs exactly one attempt against PARTNER_ENDPOINT, without',
  '             Temporal. Records it marked as a test (with a fresh test-… event id) and prints the',
  '             outcome as JSON. Exits 0 on a 2XX answer and 1 otherwise.',
].join('\n');

const fail = (message: string) => {
  process.stderr.write(`${message}\n`);
  return 1;
};

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
    throw new UsageError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
}

async function send(runtime: Runtime, event: unknown): Promise<number> {
  const prepared = prepareWebhook(event, runtime.config.PARTNER_TIMEOUT_MS);
  const database = await openMigratedDatabase(runtime);
  const starter = createTemporalStarter(runtime.config, runtime.logger);
  runtime.shutdown.add('temporal client', () => starter.close());
  try {
    const accepted = await acceptWebhook(database.knex, starter, prepared);
    const { webhookId, eventId, workflowId, runId, started } = accepted;
    process.stdout.write(
      `${JSON.stringify({ status: started ? 'accepted' : 'existing', webhook_id: webhookId, event_id: eventId, workflow_id: workflowId, run_id: runId })}\n`,
    );
    return 0;
  } catch (error) {
    if (error instanceof TemporalUnavailableError || error instanceof TemporalSetupError) return fail(`Webhook not accepted: ${error.message}`);
    throw error;
  }
}

async function sendTest(runtime: Runtime, event: unknown): Promise<number> {
  prepareWebhook(event);
  const settings = partnerSettings(runtime.config);
  if ('missing' in settings) return fail(`${settings.missing} is not set: there is no partner endpoint to test`);
  const database = await openMigratedDatabase(runtime);
  // stdout carries the outcome JSON alone; the attempt's own log line would repeat it.
  const report = await sendTestWebhook(runtime.config, database.knex, runtime.logger.child({}, { level: 'error' }), event);
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return report.succeeded ? 0 : 1;
}

export const webhooksCommand: Command = {
  name: 'webhooks',
  summary: 'Start a webhook from a JSON file, or test one delivery against the partner endpoint',
  usage: USAGE,
  async run(args) {
    const [action, file, ...rest] = args;
    if (action !== 'send' && action !== 'send-test') throw new UsageError('expected send or send-test');
    if (!file || rest.length) throw new UsageError('expected exactly one FILE.json');
    const event = await readEventFile(file);
    const runtime = bootstrap({ logsTo: 'stderr' });
    try {
      return await (action === 'send' ? send(runtime, event) : sendTest(runtime, event));
    } catch (error) {
      if (error instanceof WebhookValidationError) return fail(`Invalid webhook event; nothing was sent.\n${error.errors.map(formatPathError).join('\n')}`);
      throw error;
    } finally {
      await runtime.shutdown.shutdown();
    }
  },
};
