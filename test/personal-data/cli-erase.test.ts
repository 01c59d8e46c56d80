// `partner-service erase`: bad input exits 2 with one line, before any configuration or database is read;
// a real erasure with --wait on the webhook stack prints the record twice, pending and then completed.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { cliActor } from '../../lib/actor';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import candidateNew from '../fixtures/events/candidate-new.json';
import { runSourceCli } from '../support/cli';
import { startWebhookStack, type WebhookStack } from '../support/webhook-stack';

const erase = (args: string[], env: Record<string, string> = {}, stdin?: string) =>
  runSourceCli(['erase', ...args], env, stdin);
const PHONE = 'must be a phone number: digits with its country code (+44 20 7946 0000), spaces and + - . ( ) / allowed';

describe('partner-service erase', function () {
  this.timeout(150_000);

  it('exits 2 with one line for several subjects or none, an empty id, a malformed address or phone, read from stdin too', async () => {
    const cases: Array<[string[], string, string?]> = [
      [[], 'partner-service erase: (root): give --candidate-id, --email or --phone\n'],
      [
        ['--candidate-id', 'c-1', '--email', 'a@example.org'],
        'partner-service erase: (root): give one of --candidate-id, --email or --phone, not several\n',
      ],
      [
        ['--phone', '+44 20 7946 0000', '--email', 'a@example.org'],
        'partner-service erase: (root): give one of --candidate-id, --email or --phone, not several\n',
      ],
      [['--email', ''], 'partner-service erase: email: must not be empty\n'],
      [['--email', 'ada-at-example.org'], 'partner-service erase: email: must be an e-mail address\n'],
      [['--email', '-'], 'partner-service erase: email: must be an e-mail address\n', 'ada-at-example.org\n'],
      [['--email', '-'], 'partner-service erase: email: must not be empty\n', ''],
      [['--phone', 'call me'], `partner-service erase: phone: ${PHONE}\n`],
      [['--phone', '-'], `partner-service erase: phone: ${PHONE}\n`, '1234\n'],
      [['--candidate-id', ''], 'partner-service erase: candidate_id: must not be empty\n'],
      [['--candidate-id', 'c-1', '--company', ''], 'partner-service erase: company_id: must not be empty\n'],
      [
        ['--candidate-id', 'c-1', 'ada@example.org'],
        'partner-service erase: (root): unexpected argument: give the subject as --candidate-id ID, --email ADDRESS or --phone NUMBER\n',
      ],
    ];
    for (const [args, stderr, stdin] of cases) {
      assert.deepEqual(await erase(args, {}, stdin), { code: 2, stdout: '', stderr }, `${args.join(' ')} <<< ${stdin}`);
    }
  });

  describe('with --wait', () => {
    let stack: WebhookStack;
    before(async () => {
      stack = await startWebhookStack();
    });
    after(() => stack?.close());
    /** A candidate event with these candidate fields, delivered through the stack. */
    const delivered = async (candidate: Partial<typeof candidateNew.data.candidate>) => {
      const event = structuredClone(candidateNew);
      event.event_id = `cli-erase-${randomUUID()}`;
      Object.assign(event.data.candidate, candidate);
      const webhook = prepareWebhook(event);
      await stack.gateway.start(webhook);
      await stack.client.workflow.getHandle(webhook.workflowId).result();
    };
    const cliEnv = () => ({
      DATABASE_URL: stack.db.url,
      TEMPORAL_ADDRESS: stack.server.address,
      TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
    });

    it('records the request as cli:<user>@<host>, prints it pending, then completed with its counts', async () => {
      const candidateId = `c-${randomUUID()}`;
      await delivered({ id: candidateId });
      const result = await erase(['--candidate-id', candidateId, '--wait'], cliEnv());
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stderr, '');
      const [first, last, ...rest] = result.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.deepEqual(rest, []);
      assert.deepEqual([first.status, first.requested_by, first.subject_kind], ['pending', cliActor(), 'candidate_id']);
      assert.equal(last.erasure_id, first.erasure_id);
      assert.deepEqual(
        [
          last.status,
          last.webhooks_found,
          last.deliveries_cancelled,
          last.bodies_removed,
          last.runs_deleted,
          last.runs_gone,
        ],
        ['completed', 1, 0, 1, 1, 1],
      );
    });

    it('reads --email - from standard input, so a non-ASCII address never appears in the arguments', async () => {
      const address = `Zoë.${randomUUID().slice(0, 8)}@Bücher.example`;
      await delivered({ email: address });
      const result = await erase(['--email', '-', '--wait'], cliEnv(), `${address.toLowerCase()}\n`);
      assert.equal(result.code, 0, result.stderr);
      const last = JSON.parse(result.stdout.trim().split('\n').pop()!);
      assert.deepEqual(
        [last.status, last.subject_kind, last.webhooks_found, last.runs_gone],
        ['completed', 'email', 1, 1],
      );
      assert.equal(result.stdout.toLowerCase().includes('zoë'), false, 'the record never holds the address');
    });
  });
});
