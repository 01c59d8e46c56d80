import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { commands } from '../../cli/commands';
import { SHARED_TOKEN_WARNING } from '../../application/access/token-checker';
import { CLI, runCli, startCli, waitForExit } from '../support/cli';
import { createEmptyDatabase, createTestDatabase, useTestDatabase, type TestDatabase } from '../support/database';
import { findFreePort } from '../../lib/ports';
import companySignup from '../fixtures/events/company-signup.json';
import { closedPort, startPartnerServer } from '../support/partner-server';
import { eventually } from '../support/eventually';
import { logLines } from '../support/log-lines';
import { submitWebhook } from '../support/api';
import { CODEC_TOKEN, INTERNAL_TOKEN, PARTNER_TOKEN } from '../support/tokens';

describe('partner-service CLI', () => {
  let tmp: string;
  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'pis-cli-'));
  });
  after(async () => rm(tmp, { recursive: true, force: true }));

  it('--help lists every subcommand', async () => {
    const { code, stdout } = await runCli(['--help'], {});
    assert.equal(code, 0);
    for (const command of commands) assert.match(stdout, new RegExp(`^  ${command.name}\\s+\\S`, 'm'));
    for (const name of ['start', 'api', 'worker', 'migrate', 'import'])
      assert.ok(
        commands.some((c) => c.name === name),
        name,
      );
  });

  it('an unknown command exits 2 and shows the help', async () => {
    const { code, stderr } = await runCli(['frobnicate'], {});
    assert.equal(code, 2);
    assert.match(stderr, /unknown command "frobnicate"/);
  });

  it('a bad configuration value stops the process with one line naming the variable', async () => {
    const { code, stdout, stderr } = await runCli(['api'], { PORT: 'eighty' });
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.equal(stderr, 'Invalid configuration: PORT must be a whole number\n');
  });

  it('a key of encryption at rest that does not decode stops start, api and worker with one line naming the variable, before anything starts', async function () {
    // 18 processes one after the other: about 1.5 s each beside CI's other lanes, past mocha's default 30 s.
    this.timeout(120_000);
    const key = (bytes: number, fill = 1) => Buffer.alloc(bytes, fill).toString('base64');
    const format =
      'PAYLOAD_ENCRYPTION_KEYS must be keyId:base64key pairs separated by spaces (ids of A-Z a-z 0-9 . _ -)';
    const refused: Array<[Record<string, string>, string]> = [
      [{ PAYLOAD_ENCRYPTION_KEYS: 'k1:not*base64' }, format],
      [{ PAYLOAD_ENCRYPTION_KEYS: key(32) }, format],
      [
        { PAYLOAD_ENCRYPTION_KEYS: `k1:${key(31)}` },
        'PAYLOAD_ENCRYPTION_KEYS must each hold a 256-bit key: 32 bytes in base64 (openssl rand -base64 32)',
      ],
      [
        { PAYLOAD_ENCRYPTION_KEYS: `k1:${key(32)} k1:${key(32, 2)}` },
        'PAYLOAD_ENCRYPTION_KEYS must not repeat a key id',
      ],
      [{ SUBJECT_INDEX_KEY: 'not*base64' }, 'SUBJECT_INDEX_KEY must be base64 (openssl rand -base64 32)'],
      [
        { SUBJECT_INDEX_KEY: key(16) },
        'SUBJECT_INDEX_KEY must hold 32 to 64 bytes in base64 (openssl rand -base64 32)',
      ],
    ];
    // A partner and a database that would let each command go on: only the key stops it.
    const env = {
      PARTNER_ENDPOINT: 'http://127.0.0.1:9/hooks',
      PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
      DATABASE_URL: 'postgres://127.0.0.1:9/none',
    };
    const cwd = await mkdtemp(path.join(tmp, 'at-rest-'));
    for (const command of ['start', 'api', 'worker']) {
      for (const [setting, message] of refused) {
        const { code, stdout, stderr } = await runCli([command], { ...env, ...setting }, cwd);
        assert.deepEqual(
          { code, stdout, stderr },
          { code: 2, stdout: '', stderr: `Invalid configuration: ${message}\n` },
          `${command} ${JSON.stringify(setting)}`,
        );
      }
    }
    assert.equal(existsSync(path.join(cwd, '.data')), false, 'start made no data directory');
  });

  it('worker without a partner endpoint exits 1 with one line instead of idling', async () => {
    const { code, stdout, stderr } = await runCli(['worker'], {});
    assert.equal(code, 1);
    assert.equal(stdout, '');
    assert.equal(stderr, 'PARTNER_ENDPOINT is not set: the worker has no partner endpoint to deliver to\n');
  });

  it('a second worker on a taken WORKER_HTTP_PORT exits 2 with one line naming the setting', async () => {
    const db = await createTestDatabase();
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    try {
      const { code, stderr } = await runCli(['worker'], {
        PATH: process.env.PATH,
        DATABASE_URL: db.url,
        PARTNER_ENDPOINT: 'http://127.0.0.1:9/hooks',
        PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
        TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`,
        WORKER_HTTP_PORT: String(port),
        LOG_LEVEL: 'silent',
      });
      assert.equal(code, 2);
      assert.equal(
        stderr,
        `WORKER_HTTP_PORT ${port} is already in use on 127.0.0.1: give each worker on one host its own WORKER_HTTP_PORT\n`,
      );
    } finally {
      taken.close();
      await db.drop();
    }
  });

  describe('import', () => {
    let db: TestDatabase;
    beforeEach(async () => {
      db = await createTestDatabase();
    });
    afterEach(async () => db.drop());

    it('imports a file and prints only a JSON summary on stdout, and nothing on stderr', async () => {
      const file = path.join(tmp, 'ok.json');
      await writeFile(file, JSON.stringify({ companies: [{ id: 'acme', name: 'Acme' }] }));
      const { code, stdout, stderr } = await runCli(['import', file], { DATABASE_URL: db.url });
      assert.equal(code, 0);
      assert.equal(stderr, '');
      assert.deepEqual(JSON.parse(stdout).companies, { inserted: 1, updated: 0, unchanged: 0, deleted: 0 });
      assert.equal((await db.knex('companies').count({ n: '*' }))[0].n, 1);
    });

    it('exits 1 naming each JSON path, and writes nothing', async () => {
      const file = path.join(tmp, 'bad.json');
      await writeFile(
        file,
        JSON.stringify({
          companies: [{ id: 'acme', name: 'Acme' }],
          users: [{ id: 1, first_name: 'A', last_name: 'B', email_primary: 'a@b.test', emails: ['a@b.test', 'nope'] }],
          company_users: [{ company_id: 'acme', user_id: 1, role: 'king' }],
        }),
      );
      const { code, stdout, stderr } = await runCli(['import', file], { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
      assert.equal(code, 1);
      assert.equal(stdout, '');
      assert.equal(
        stderr,
        [
          'Import failed; nothing was written.',
          'users[0].emails[1]: not an e-mail address',
          'company_users[0].role: must be one of admin, owner, manager, member',
          '',
        ].join('\n'),
      );
      assert.equal((await db.knex('companies').count({ n: '*' }))[0].n, 0);
    });

    it('exits 1 on a file that is not JSON', async () => {
      const file = path.join(tmp, 'broken.json');
      await writeFile(file, '{"companies": [');
      const { code, stderr } = await runCli(['import', file], { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
      assert.equal(code, 1);
      assert.match(stderr, /^Import failed; nothing was written\.\n\(file\): /);
    });

    it('exits 2 without a FILE, or with an unknown option', async () => {
      const { code, stderr } = await runCli(['import'], { DATABASE_URL: db.url });
      assert.equal(code, 2);
      assert.match(stderr, /^partner-service import: expected exactly one FILE\n\nUsage: partner-service import FILE/);
      const bogus = await runCli(['import', 'x.json', '--bogus'], { DATABASE_URL: db.url });
      assert.equal(bogus.code, 2);
      assert.match(
        bogus.stderr,
        /^partner-service import: Unknown option '--bogus'\. .*\n\nUsage: partner-service import FILE/,
      );
    });
  });

  describe('stderr of a command that succeeds', () => {
    const db = useTestDatabase();

    it('is empty: apps list, partner status, webhooks list, migrate and db url print their result on stdout alone', async () => {
      const env = { DATABASE_URL: db.url };
      const results = await Promise.all(
        [['apps', 'list', '--json'], ['partner', 'status'], ['webhooks', 'list'], ['migrate'], ['db', 'url']].map(
          (args) => runCli(args, env),
        ),
      );
      assert.deepEqual(
        results.map(({ code, stderr }) => [code, stderr]),
        [
          [0, ''],
          [0, ''],
          [0, ''],
          [0, ''],
          [0, ''],
        ],
      );
      const [apps, partner, webhooks, migrate, url] = results.map(({ stdout }) => stdout);
      assert.equal(apps, '[]\n');
      assert.equal(JSON.parse(partner).state, 'active');
      assert.equal(webhooks, '{"next_cursor":null,"results":[]}\n');
      assert.equal(migrate, '{"applied":[]}\n');
      assert.equal(url, `${db.url}\n`);
    });

    it('with --verbose, or LOG_LEVEL=info, carries the info lines: the embedded PostgreSQL, the migrations applied', async function () {
      this.timeout(60_000);
      const cwd = await mkdtemp(path.join(tmp, 'verbose-'));
      const header = 'APP_ID\tSTATUS\tCREATED\tSCOPES\tCOMPANIES\tNAME\n';
      // The first run as root lets the postgres user reach its fresh data directory: a warning that stays.
      const first = await runCli(['apps', 'list'], {}, cwd);
      assert.deepEqual([first.code, first.stdout], [0, header]);
      const granted = 'granted other-users search permission so the postgres user can reach the data directory';
      assert.deepEqual(
        [...new Set(logLines(first.stderr).map((l) => `${l.level} ${l.msg}`))],
        process.getuid?.() === 0 ? [`40 ${granted}`] : [],
      );
      const quiet = await runCli(['apps', 'list'], {}, cwd);
      assert.deepEqual([quiet.code, quiet.stdout, quiet.stderr], [0, header, '']);
      for (const [args, env] of [
        [['apps', 'list', '--verbose'], {}],
        [['--verbose', 'apps', 'list'], {}],
        [['apps', 'list'], { LOG_LEVEL: 'info' }],
      ] as const) {
        const loud = await runCli([...args], env, cwd);
        assert.deepEqual([loud.code, loud.stdout], [0, quiet.stdout], args.join(' '));
        assert.deepEqual(
          logLines(loud.stderr).map((l) => [l.level, l.msg]),
          [[30, 'DATABASE_URL is not set: using embedded PostgreSQL']],
          args.join(' '),
        );
      }
      const empty = await createEmptyDatabase();
      try {
        const migrated = await runCli(['migrate', '--verbose'], { DATABASE_URL: empty.url });
        assert.equal(migrated.code, 0, migrated.stderr);
        const { applied } = JSON.parse(migrated.stdout) as { applied: string[] };
        assert.ok(applied.length > 0);
        assert.deepEqual(
          logLines(migrated.stderr).map((l) => [l.level, l.msg, l.applied]),
          [[30, 'migrations applied', applied]],
        );
      } finally {
        await empty.drop();
      }
    });

    it('a warning that matters stays: apps create says once that the key cannot be shown again', async () => {
      await db.knex('companies').insert({ id: 'stderr-co', name: 'Stderr Co' });
      const created = await runCli(['apps', 'create', '--name', 'n', '--company', 'stderr-co', '--json'], {
        DATABASE_URL: db.url,
      });
      assert.equal(created.code, 0, created.stderr);
      assert.equal(created.stderr, 'Store the key now: it cannot be shown again.\n');
    });
  });

  describe('start with a partner and the project temporal CLI', () => {
    it('runs the whole stack: a dev server under DATA_DIR, the URLs a newcomer needs, a delivered webhook, every child stopped', async function () {
      this.timeout(120_000);
      const partner = await startPartnerServer();
      const apiPort = await findFreePort();
      const env = {
        PATH: process.env.PATH,
        PORT: String(apiPort),
        PARTNER_ENDPOINT: partner.url,
        PARTNER_ACCESS_TOKEN: PARTNER_TOKEN,
        INTERNAL_API_TOKEN: INTERNAL_TOKEN,
        // Encrypted payloads, and the dev server's UI wired to the codec server.
        PAYLOAD_ENCRYPTION_KEYS: `start-key:${Buffer.alloc(32, 7).toString('base64')}`,
        CODEC_AUTH_TOKEN: CODEC_TOKEN,
      };
      const cwd = await mkdtemp(path.join(tmp, 'stack-'));
      const { child, output, started } = startCli(['start'], env, cwd, /"msg":"partner service started/);
      try {
        await started;
        const line = logLines(output.stdout).find((l) => /^partner service started/.test(l.msg))!;
        const api = `http://127.0.0.1:${apiPort}`;
        assert.equal(line.api, api);
        // INTERNAL_API_TOKEN is set: one warning that it is a shared token with every scope.
        assert.deepEqual(
          logLines(output.stdout)
            .filter((l) => l.msg === SHARED_TOKEN_WARNING)
            .map((l) => l.level),
          [40],
        );
        assert.equal(line.openapi, `${api}/openapi.json`);
        assert.equal(line.scim, `${api}/scim/v2`);
        assert.equal(line.temporalSource, 'temporal CLI');
        // A configured partner: no stand-in for it.
        assert.equal(line.partnerInbox, 'off');
        assert.match(line.msg, /, partner inbox off$/);
        assert.ok(!logLines(output.stdout).some((l) => /local partner inbox/.test(l.msg)), output.stdout);
        assert.match(line.temporalUi, /^http:\/\/127\.0\.0\.1:\d+$/);
        assert.equal((await fetch(line.temporalUi)).status, 200);
        assert.equal(line.codec, `${api}/codec`);
        const uiSettings = (await (await fetch(`${line.temporalUi}/api/v1/settings`)).json()) as {
          Codec: { Endpoint: string };
        };
        assert.equal(uiSettings.Codec.Endpoint, `${api}/codec/ui/${CODEC_TOKEN}`);
        const preflight = await fetch(`${uiSettings.Codec.Endpoint}/decode`, {
          method: 'OPTIONS',
          headers: {
            origin: line.temporalUi,
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'content-type,x-namespace',
          },
        });
        assert.equal(preflight.headers.get('access-control-allow-origin'), line.temporalUi);
        const decoded = await fetch(`${uiSettings.Codec.Endpoint}/decode`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"payloads":[]}',
        });
        assert.deepEqual(await decoded.json(), { payloads: [] });
        assert.ok(existsSync(path.join(cwd, '.data', 'temporal', 'dev-server.sqlite')));

        await submitWebhook(api, INTERNAL_TOKEN, { ...companySignup, event_id: `start-${process.pid}-${Date.now()}` });
        const deadline = Date.now() + 30_000;
        while (partner.requests.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        assert.equal(partner.requests.length, 1);
        assert.equal(partner.requests[0].headers.authorization, `Bearer ${PARTNER_TOKEN}`);
      } finally {
        child.kill('SIGTERM');
        await partner.close();
      }
      assert.equal(await waitForExit(child), 0);
      const leftOver = execFileSync('ps', ['-eo', 'args'])
        .toString()
        .split('\n')
        .filter((args) => args.includes(path.join(cwd, '.data')));
      assert.deepEqual(leftOver, []);
    });
  });

  it('logs readable lines in a terminal and JSON anywhere else', async () => {
    const db = await createTestDatabase();
    try {
      // util-linux `script` gives the command a pseudo-terminal, as a person's shell would.
      const inTerminal = execFileSync('script', ['-qec', `${process.execPath} ${CLI} migrate --verbose`, '/dev/null'], {
        env: { PATH: process.env.PATH, DATABASE_URL: db.url, NO_COLOR: '1' },
      }).toString();
      assert.match(inTerminal, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: database already up to date/m);
      assert.doesNotMatch(inTerminal, /"level":/);
      const piped = await runCli(['migrate', '--verbose'], { DATABASE_URL: db.url });
      assert.deepEqual([piped.code, piped.stdout], [0, '{"applied":[]}\n']);
      assert.deepEqual(
        logLines(piped.stderr).map((l) => [l.level, l.msg]),
        [[30, 'database already up to date']],
      );
    } finally {
      await db.drop();
    }
  });

  describe('the CLI beside a running service on the same DATA_DIR', () => {
    it('db url, apps, migrate and import use the running embedded PostgreSQL, and the service keeps serving', async function () {
      this.timeout(120_000);
      const cwd = await mkdtemp(path.join(tmp, 'beside-'));
      const apiPort = await findFreePort();
      // TEMPORAL_ADDRESS at a closed port: this test is about PostgreSQL, so start runs no dev server.
      const env = {
        PATH: process.env.PATH,
        PORT: String(apiPort),
        TEMPORAL_ADDRESS: `127.0.0.1:${await findFreePort()}`,
      };
      const before = await runCli(['db', 'url'], env, cwd);
      assert.equal(before.code, 1);
      assert.equal(
        before.stderr,
        `partner-service db: the embedded PostgreSQL in ${path.join(cwd, '.data', 'postgres')} is not running; start the service (npm start) and ask again\n`,
      );
      const { child, output, started } = startCli(['start'], env, cwd, /"msg":"partner service started/);
      try {
        await started;
        // Temporal is configured, so this is not the fully embedded mode: no partner means delivery waits, as ever.
        assert.equal(logLines(output.stdout).find((l) => /^partner service started/.test(l.msg))!.partnerInbox, 'off');
        assert.ok(
          logLines(output.stdout).some(
            (l) =>
              l.msg ===
              'PARTNER_ENDPOINT is not set: webhook delivery is paused; the worker does not poll and webhooks wait in Temporal',
          ),
          output.stdout,
        );
        assert.ok(!logLines(output.stdout).some((l) => /local partner inbox/.test(l.msg)), output.stdout);
        const url = await runCli(['db', 'url'], env, cwd);
        assert.equal(url.code, 0, url.stderr);
        assert.match(url.stdout, /^postgres:\/\/postgres:postgres@127\.0\.0\.1:\d+\/partner_service\n$/);
        const apps = await runCli(['apps', 'list', '--json'], env, cwd);
        assert.equal(apps.code, 0, apps.stderr);
        assert.deepEqual(
          JSON.parse(apps.stdout).map((a: { app_id: string; status: string }) => [a.app_id, a.status]),
          [['partner-demo', 'active']],
        );
        assert.equal(apps.stderr, '');
        const verbose = await runCli(['apps', 'list', '--json', '--verbose'], env, cwd);
        assert.deepEqual([verbose.code, verbose.stdout], [0, apps.stdout]);
        assert.deepEqual(
          logLines(verbose.stderr).map((l) => l.msg),
          [
            'using the embedded PostgreSQL of the running service',
            'DATABASE_URL is not set: using embedded PostgreSQL',
          ],
        );
        assert.equal((await runCli(['migrate'], env, cwd)).code, 0);
        const file = path.join(cwd, 'more.json');
        await writeFile(file, JSON.stringify({ companies: [{ id: 'initech', name: 'Initech' }] }));
        const imported = await runCli(['import', file], env, cwd);
        assert.equal(imported.code, 0, imported.stderr);
        assert.deepEqual(JSON.parse(imported.stdout).companies, { inserted: 1, updated: 0, unchanged: 0, deleted: 0 });
        assert.equal((await fetch(`http://127.0.0.1:${apiPort}/readyz`)).status, 200);
      } finally {
        child.kill('SIGTERM');
      }
      assert.equal(await waitForExit(child), 0);
    });

    it('an unexpected error prints its message, never "undefined"', async () => {
      // "localhost" resolves to two addresses; both refuse, and Node reports an AggregateError without a message.
      const { code, stderr } = await runCli(['migrate'], {
        DATABASE_URL: `postgres://u:p@localhost:${await findFreePort()}/x`,
      });
      assert.equal(code, 1);
      assert.doesNotMatch(stderr, /undefined/);
      assert.match(stderr, /^partner-service: connect ECONNREFUSED .+$/m);
      assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
    });
  });

  describe('start with no environment at all', () => {
    it('starts embedded PostgreSQL, the demo directory, Temporal and the partner inbox; a sent webhook reaches the inbox signed; stops cleanly', async function () {
      this.timeout(180_000);
      // No PATH either: the temporal CLI is found in the project's .temporal/venv from dist/.
      // Started, and ready once its worker polls (the two lines come in either order).
      const startedAndPolling = /^(?=[\s\S]*"msg":"partner service started)(?=[\s\S]*"msg":"webhook worker polling")/;
      const { child, output, started } = startCli(['start'], {}, tmp, startedAndPolling, 90_000);
      try {
        await started;
        const health = await fetch('http://127.0.0.1:3000/healthz');
        assert.equal(health.status, 200);
        assert.deepEqual(await health.json(), { status: 'ok' });
        const ready = await fetch('http://127.0.0.1:3000/readyz');
        assert.equal(ready.status, 200);
        assert.deepEqual(await ready.json(), { status: 'ready', checks: { database: 'ok', temporal: 'polling' } });
        const lines = logLines(output.stdout);
        assert.ok(lines.some((l) => l.msg === 'DATABASE_URL is not set: using embedded PostgreSQL'));
        assert.ok(lines.some((l) => /imported the demo directory/.test(l.msg) && l.summary.users.inserted === 5));

        const line = lines.find((l) => /^partner service started/.test(l.msg))!;
        assert.equal(line.temporalSource, 'temporal CLI');
        const inbox: string = line.partnerInbox;
        // 3002 when free; another process on this machine may hold it.
        assert.match(inbox, /^http:\/\/127\.0\.0\.1:\d+\/$/);
        assert.ok(line.msg.endsWith(`, partner inbox ${inbox}`), line.msg);
        const loud = lines.find((l) => l.level === 40 && /local partner inbox/.test(l.msg));
        assert.equal(
          loud?.msg,
          `no PARTNER_ENDPOINT: webhooks are delivered to the local partner inbox at ${inbox} (a loopback receiver that answers 204); ` +
            'set PARTNER_ENDPOINT and PARTNER_ACCESS_TOKEN to deliver to a real partner',
        );
        assert.ok(lines.indexOf(loud) < lines.indexOf(line));

        // The newcomer's next command, from the same directory. `webhooks send` reaches Temporal at
        // 127.0.0.1:7233; only when another server holds that port did start's dev server take another.
        const clientEnv = line.temporal === '127.0.0.1:7233' ? {} : { TEMPORAL_ADDRESS: line.temporal };
        const sent = await runCli(
          ['webhooks', 'send', path.join(__dirname, '..', '..', 'examples', 'events', 'job-new.json')],
          clientEnv,
          tmp,
        );
        assert.equal(sent.code, 0, sent.stderr);
        const { webhook_id: webhookId, status } = JSON.parse(sent.stdout);
        assert.equal(status, 'accepted');

        type Delivery = {
          webhook_id: string;
          event_type: string;
          action: string;
          checks: object;
          headers: Record<string, string>;
        };
        let delivery: Delivery | undefined;
        await eventually(
          'the webhook in the partner inbox',
          async () => {
            const { deliveries } = (await (await fetch(`${inbox}deliveries`)).json()) as { deliveries: Delivery[] };
            delivery = deliveries.find((d) => d.webhook_id === webhookId);
            return delivery !== undefined;
          },
          60_000,
        );
        assert.deepEqual(delivery!.checks, { authorization: 'valid', signature: 'valid' });
        assert.deepEqual([delivery!.event_type, delivery!.action], ['job', 'new']);
        assert.equal(delivery!.headers.authorization, 'Bearer ***');
        const page = await (await fetch(inbox)).text();
        assert.ok(page.includes(webhookId) && page.includes('job/new'));

        let listed: { webhook_id: string; status: string } | undefined;
        await eventually('the delivery log saying delivered', async () => {
          const list = await runCli(['webhooks', 'list'], clientEnv, tmp);
          assert.equal(list.code, 0, list.stderr);
          listed = (JSON.parse(list.stdout).results as { webhook_id: string; status: string }[]).find(
            (w) => w.webhook_id === webhookId,
          );
          return listed?.status === 'delivered';
        });
        // Neither the token nor the secret start made up is ever printed.
        assert.doesNotMatch(output.stdout, /whsec_|"PARTNER_ACCESS_TOKEN"|Bearer (?!\*\*\*)/);
      } finally {
        child.kill('SIGTERM');
      }
      assert.equal(await waitForExit(child), 0);
      assert.ok(logLines(output.stdout).some((l) => l.msg === 'shutting down' && l.signal === 'SIGTERM'));
      const leftOver = execFileSync('ps', ['-eo', 'args'])
        .toString()
        .split('\n')
        .filter((args) => args.includes(path.join(tmp, '.data')));
      assert.deepEqual(leftOver, []);
    });
  });
});
