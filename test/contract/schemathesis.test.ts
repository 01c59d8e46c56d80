// The exact contract (issue 31): schemathesis, every check, over the whole /openapi.json of a real server (the
// API on loopback over PostgreSQL, a Temporal dev server behind the internal webhook routes). It must end with
// no finding; the only exceptions are in test/contract/schemathesis.toml, each with its reason.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { seedDataset } from '../scim/support';
import { startTestApi } from '../support/api';
import type { WebhookStack } from '../support/webhook-stack';
import { CONTRACT_APP, SEEDED_ERASURE, SEEDED_WEBHOOKS, startContractStack } from './contract-stack';
import { CONFIG_FILE, runSchemathesis } from './schemathesis-cli';
import { SCIM_TOKEN, INTERNAL_TOKEN } from '../support/tokens';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Bounded so the test takes about two minutes on a 2-core machine; the seed makes CI runs repeat exactly. */
const MAX_EXAMPLES = process.env.PIS_SCHEMATHESIS_EXAMPLES ?? '25';
const SEED = process.env.PIS_SCHEMATHESIS_SEED ?? '31';
const credentials = {
  PIS_APP_ID: CONTRACT_APP.appId,
  PIS_APP_KEY: CONTRACT_APP.key,
  PIS_INTERNAL_TOKEN: INTERNAL_TOKEN,
};
const options = (url: string) => [
  `${url}/openapi.json`,
  '--checks',
  'all',
  '--max-examples',
  MAX_EXAMPLES,
  '--seed',
  SEED,
  '--output-sanitize',
  'false',
];

/** Counts the operations of the served document, so the run is checked against the document itself. */
async function operationsOf(url: string, pathPrefix = '/'): Promise<number> {
  const res = await fetch(`${url}/openapi.json`);
  assert.equal(res.status, 200);
  const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(doc.paths)
    .filter(([path]) => path.startsWith(pathPrefix))
    .flatMap(([, item]) => Object.keys(item).filter((key) => METHODS.includes(key))).length;
}

/**
 * Exit 0, no finding and no warning, and `operations` (of `total` in the document) selected and all of them
 * tested: a run cannot pass vacuously.
 */
function assertClean(
  run: Awaited<ReturnType<typeof runSchemathesis>>,
  operations: number,
  total: number,
  seconds: number,
) {
  console.log(`${run.summary}\n(schemathesis ran ${seconds.toFixed(1)} s)`);
  assert.equal(run.exitCode, 0, run.output);
  assert.deepEqual(run.selected, { count: operations, of: total }, run.summary);
  assert.equal(run.tested, operations, run.summary);
  assert.match(run.summary, /No issues found/, run.output);
}

describe('contract: schemathesis over the whole /openapi.json', function () {
  this.timeout(600_000);
  let stack: WebhookStack;

  before(async () => {
    stack = await startContractStack();
  });
  after(() => stack?.close());

  it("the configuration draws the seeded webhooks' and erasure's ids", () => {
    const config = readFileSync(CONFIG_FILE, 'utf8');
    for (const id of [...Object.values(SEEDED_WEBHOOKS), SEEDED_ERASURE]) assert.ok(config.includes(`"${id}"`), id);
  });

  it('every check passes on every operation', async () => {
    const operations = await operationsOf(stack.api.url);
    // Listings, SCIM (Users and Groups, discovery), the internal webhook API, the ordering status, the partner controls, erasures, the audit trail and its verification (31); the partner API (25).
    assert.equal(operations, 56);
    assert.equal(await operationsOf(stack.api.url, '/partner/v1/'), 25);
    const started = Date.now();
    const run = await runSchemathesis(options(stack.api.url), credentials);
    assertClean(run, operations, operations, (Date.now() - started) / 1000);
  });

  it('with SCIM_BEARER_TOKEN set, the SCIM operations demand it, exactly as the document then says', async () => {
    // The other deployment of the SCIM routes: its document requires the token. SCIM needs no Temporal (the
    // shared internal token is set only so that the run has a credential for every scheme the document names).
    const api = await startTestApi({ SCIM_BEARER_TOKEN: SCIM_TOKEN, INTERNAL_API_TOKEN: INTERNAL_TOKEN }, seedDataset);
    try {
      const operations = await operationsOf(api.api.url, '/scim/v2');
      assert.equal(operations, 9);
      const total = await operationsOf(api.api.url);
      const started = Date.now();
      // A header given on the command line counts as explicit auth: ignored_auth still probes without it and with a wrong one.
      const scim = ['--include-path-regex', '^/scim/v2', '--header', `Authorization: Bearer ${SCIM_TOKEN}`];
      const run = await runSchemathesis([...options(api.api.url), ...scim], credentials);
      assertClean(run, operations, total, (Date.now() - started) / 1000);
    } finally {
      await api.close();
    }
  });
});
