// `partner-service erase`: bad input exits 2 with one line, before any configuration or database is read;
// a real erasure with --wait on the webhook stack prints the record twice, pending and then completed.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { cliActor } from '../../../lib/actor';
import { prepareWebhook } from '../../../application/start-webhook';
import candidateNew from '../../fixtures/events/candidate-new.json';
import { runSourceCli } from '../../support/cli';
import { startWebhookStack, type WebhookStack } from '../../support/webhook-stack';

const erase = (args: string[], env: Record<string, string> = {}) => runSourceCli(['erase', ...args], env);

describe('partner-service erase', function () {
  this.timeout(150_000);

  it('exits 2 with one line for both subjects or neither, an empty id or a malformed address', async () => {
    const cases: Array<[string[], string]> = [
      [[], 'partner-service erase: (root): give --candidate-id or --email\n'],
      [['--candidate-id', 'c-1', '--email', 'a@example.org'], 'partner-service erase: (root): give --candidate-id or --email, not both\n'],
      [['--email', ''], 'partner-service erase: email: must be an e-mail address\n'],
      [['--email', 'ada-at-example.org'], 'partner-service erase: email: must be an e-mail address\n'],
      [['--candidate-id', ''], 'partner-service erase: candidate_id: must not be empty\n'],
      [['--candidate-id', 'c-1', '--company', ''], 'partner-service erase: company_id: must not be empty\n'],
    ];
    for (const [args, stderr] of cases) {
      assert.deepEqual(await erase(args), { code: 2, stdout: '', stderr }, args.join(' '));
    }
  });

  describe('with --wait', () => {
    let stack: WebhookStack;
    before(async () => {
      stack = await startWebhookStack();
    });
    after(() => stack?.close());

    it('records the request as cli:<user>@<host>, prints it pending, then completed with its counts', async () => {
      const candidateId = `c-${randomUUID()}`;
      const event = structuredClone(candidateNew);
      event.event_id = `cli-erase-${randomUUID()}`;
      event.data.candidate.id = candidateId;
      const webhook = prepareWebhook(event);
      await stack.gateway.start(webhook);
      await stack.client.workflow.getHandle(webhook.workflowId).result();
      const result = await erase(['--candidate-id', candidateId, '--wait'], {
        DATABASE_URL: stack.db.url,
        TEMPORAL_ADDRESS: stack.server.address,
        TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
      });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stderr, '');
      const [first, last, ...rest] = result.stdout.trim().split('\n').map((line) => JSON.parse(line));
      assert.deepEqual(rest, []);
      assert.deepEqual([first.status, first.requested_by, first.subject_kind], ['pending', cliActor(), 'candidate_id']);
      assert.equal(last.erasure_id, first.erasure_id);
      assert.deepEqual(
        [last.status, last.webhooks_found, last.deliveries_cancelled, last.bodies_removed, last.runs_deleted, last.runs_gone],
        ['completed', 1, 0, 1, 1, 1],
      );
    });
  });
});
