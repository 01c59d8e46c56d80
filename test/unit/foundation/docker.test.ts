// No Docker engine runs where this is tested, so the compose file and the Dockerfile are checked for what
// would break them: wiring, configuration the service accepts, order of start-up, and the build context.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../../../lib/config';
import { WEBHOOK_SEARCH_ATTRIBUTES } from '../../../temporal/search-attributes';

const ROOT = path.join(__dirname, '..', '..', '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

interface Service {
  image?: string;
  build?: string;
  command?: string[] | string;
  ports?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
}

describe('docker-compose.yml and Dockerfile', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> };
  const { services } = compose;
  const samples: Record<string, string> = {
    PARTNER_ENDPOINT: 'https://partner.example/hooks',
    PARTNER_ACCESS_TOKEN: 'token',
    INTERNAL_API_TOKEN: 'internal-token-0123456789',
    PAYLOAD_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
    SUBJECT_INDEX_KEYS: `idx1:${Buffer.alloc(32, 7).toString('base64')}`,
    CODEC_AUTH_TOKEN: 'codec-token-0123456789',
  };
  /** A service's environment as compose resolves it: ${VAR:-default} takes its default; ${VAR:?message} is given by the operator. */
  const resolvedEnvironment = (name: string): Record<string, string> =>
    Object.fromEntries(
      Object.entries(services[name].environment!).map(([key, value]) => [
        key,
        String(value)
          .replace(/\$\{(\w+):-([^}]*)\}/g, (_m, _v, fallback) => fallback)
          .replace(/\$\{(\w+):\?[^}]*\}/g, (_m, v) => samples[v]),
      ]),
    );

  it('has the Temporal stack and the service', () => {
    assert.deepEqual(Object.keys(services).sort(), [
      'api',
      'migrate',
      'postgresql',
      'temporal',
      'temporal-postgresql',
      'temporal-schema',
      'temporal-setup',
      'temporal-ui',
      'worker',
    ]);
  });

  it('gives the service an environment its configuration accepts, with the required values set', () => {
    for (const name of ['api', 'worker', 'migrate']) {
      const config = loadConfig(resolvedEnvironment(name));
      assert.equal(config.temporal.address, 'temporal:7233', name);
      assert.equal(config.DATABASE_URL, 'postgres://partner:partner@postgresql:5432/partner_service', name);
      assert.equal(config.PAYLOAD_ENCRYPTION_KEYS?.length, 1, name);
      assert.deepEqual(
        config.SUBJECT_INDEX_KEYS?.map(({ id }) => id),
        ['idx1'],
        name,
      );
      assert.equal(config.CODEC_AUTH_TOKEN, samples.CODEC_AUTH_TOKEN, name);
    }
  });

  it('shows a TLS or Temporal Cloud connection as a commented alternative, in variables docs/temporal-connection.md describes', () => {
    const comments = read('docker-compose.yml')
      .split('\n')
      .filter((line) => line.trim().startsWith('#'));
    const commented = comments.flatMap((line) => [...line.matchAll(/\bTEMPORAL_[A-Z_]+\b/g)].map((m) => m[0]));
    const reference = read('docs/temporal-connection.md');
    for (const variable of [
      'TEMPORAL_API_KEY',
      'TEMPORAL_TLS_CLIENT_CERT_PATH',
      'TEMPORAL_TLS_CLIENT_KEY_PATH',
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
      'TEMPORAL_CONFIG_FILE',
      'TEMPORAL_PROFILE',
    ]) {
      assert.ok(commented.includes(variable), `${variable} in the commented alternative`);
    }
    for (const variable of new Set(commented))
      assert.ok(reference.includes(`| \`${variable}\``), `${variable} in the reference of docs/temporal-connection.md`);
  });

  it("wires Temporal UI to the API's codec server: its endpoint (token in the path) and its origin allowed by CORS", () => {
    const ui = resolvedEnvironment('temporal-ui');
    assert.equal(ui.TEMPORAL_CODEC_ENDPOINT, `http://localhost:3000/codec/ui/${samples.CODEC_AUTH_TOKEN}`);
    assert.deepEqual(services['temporal-ui'].ports, ['8080:8080']);
    assert.deepEqual(services.api.ports, ['3000:3000']);
    assert.deepEqual(loadConfig(resolvedEnvironment('api')).CODEC_CORS_ORIGINS, ['http://localhost:8080']);
  });

  it('starts the API and the worker after migrations and after the search attributes exist', () => {
    for (const name of ['api', 'worker']) {
      assert.deepEqual(services[name].depends_on, {
        migrate: { condition: 'service_completed_successfully' },
        'temporal-setup': { condition: 'service_completed_successfully' },
      });
      assert.deepEqual(services[name].command, [name]);
      assert.equal(services[name].build, '.');
    }
    assert.deepEqual(services.temporal.depends_on, {
      'temporal-schema': { condition: 'service_completed_successfully' },
    });
  });

  it('registers exactly the Keyword search attributes the workflow upserts', () => {
    const script = String(services['temporal-setup'].command);
    const names = /for name in ([\w ]+);/.exec(script)![1].split(' ');
    assert.deepEqual(
      names,
      WEBHOOK_SEARCH_ATTRIBUTES.map((key) => key.name),
    );
    assert.match(script, /--type Keyword/);
  });

  it('builds an image whose entry point is the compiled CLI, from a context without local state', () => {
    const dockerfile = read('Dockerfile');
    assert.match(dockerfile, /RUN npm run build && npm prune --omit=dev/);
    assert.match(dockerfile, /ENTRYPOINT \["node", "dist\/cli\/main\.js"\]/);
    assert.match(dockerfile, /COPY --from=build \/app\/dist \.\/dist/);
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['node_modules', 'dist', 'build', '.data', '.temporal', '.git', '.env'])
      assert.ok(ignored.includes(entry), entry);
  });

  it('the production build (dist/, which the image copies) holds the service alone: no bench/ or test/', () => {
    // npm test builds first, from tsconfig.build.json, exactly as the Dockerfile's `npm run build` does.
    const dist = path.join(ROOT, 'dist');
    assert.ok(existsSync(path.join(dist, 'cli', 'main.js')) && existsSync(path.join(dist, 'workflow-bundle.js')));
    const top = readdirSync(dist);
    for (const folder of ['bench', 'test']) assert.ok(!top.includes(folder), `dist/${folder}`);
    const included: string[] = JSON.parse(read('tsconfig.build.json')).include;
    assert.deepEqual(
      included.filter((entry) => /^(bench|test)\b/.test(entry)),
      [],
    );
  });
});
