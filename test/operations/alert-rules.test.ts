// The Prometheus alert rules and their unit tests, run by Prometheus's own promtool (Debian's prometheus
// package, from scripts/install-test-servers.sh). A missing promtool fails the suite: there is no skip.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';

const ROOT = path.join(__dirname, '..', '..');
const RULES = 'deploy/prometheus/partner-alerts.yml';
const TESTS = 'deploy/prometheus/partner-alerts.test.yml';
const DASHBOARD = 'deploy/grafana/partner-protection.json';
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface ExpectedAlert {
  exp_labels?: Record<string, string>;
  exp_annotations?: Record<string, string>;
}
interface Case {
  eval_time: string;
  alertname: string;
  exp_alerts: ExpectedAlert[];
}
interface TestFile {
  rule_files: string[];
  tests: { alert_rule_test: Case[] }[];
}

/** promtool's exit code and output; a failing run is a result to assert on, a missing promtool is not. */
function promtool(...args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    execFile('promtool', args, { cwd: ROOT }, (error, stdout, stderr) => {
      if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT') {
        reject(
          new Error(
            "promtool not found: run scripts/install-test-servers.sh (it installs Debian's prometheus package)",
          ),
        );
        return;
      }
      const code = error ? Number((error as { code?: number }).code ?? 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

const rules = (): Rule[] =>
  (parse(read(RULES)) as { groups: { rules: Rule[] }[] }).groups.flatMap((group) => group.rules);
const cases = (file: TestFile): Case[] => file.tests.flatMap((test) => test.alert_rule_test);

/** The test file in a temp folder, changed by `change`: rule_files made absolute, since promtool resolves them from the test file. */
async function runChangedTests(change: (file: TestFile) => void): Promise<{ code: number; output: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pis-alerts-'));
  try {
    const file = parse(read(TESTS)) as TestFile;
    file.rule_files = [path.join(ROOT, RULES)];
    change(file);
    const copy = path.join(dir, 'partner-alerts.test.yml');
    await writeFile(copy, stringify(file));
    return await promtool('test', 'rules', copy);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('alert rules (deploy/prometheus)', () => {
  it('pass promtool check rules', async () => {
    const { code, output } = await promtool('check', 'rules', RULES);
    assert.equal(code, 0, output);
    assert.match(output, new RegExp(`SUCCESS: ${rules().length} rules found`));
  });

  it('pass their unit tests (promtool test rules)', async () => {
    const { code, output } = await promtool('test', 'rules', TESTS);
    assert.equal(code, 0, output);
    assert.match(output, /^ {2}SUCCESS$/m);
  });

  it('fail when an expected alert is taken out of the tests', async () => {
    let removed: Case | undefined;
    const { code, output } = await runChangedTests((file) => {
      removed = cases(file).find((c) => c.exp_alerts.length > 0)!;
      removed.exp_alerts = [];
    });
    assert.notEqual(code, 0, output);
    assert.match(output, /FAILED/);
    assert.match(output, new RegExp(`alertname: ${removed!.alertname}, time: `));
  });

  it('check every case: with each expectation flipped, every case fails', async () => {
    // A firing case expecting nothing, and a silent one expecting an alert: each must be a failure of its own.
    let count = 0;
    const { code, output } = await runChangedTests((file) => {
      for (const c of cases(file)) {
        c.exp_alerts = c.exp_alerts.length > 0 ? [] : [{ exp_labels: { severity: 'none' } }];
        count += 1;
      }
    });
    assert.notEqual(code, 0, output);
    assert.equal(output.match(/^ {4}alertname: /gm)?.length, count, output);
  });

  it('test every alert: a case where it fires, with exact labels and annotations, and one where it does not', () => {
    const alerts = new Set(rules().map((rule) => rule.alert!));
    const all = cases(parse(read(TESTS)) as TestFile);
    for (const alert of alerts) {
      const mine = all.filter((c) => c.alertname === alert);
      assert.ok(
        mine.some((c) => c.exp_alerts.length > 0),
        `${alert} fires in a case`,
      );
      assert.ok(
        mine.some((c) => c.exp_alerts.length === 0),
        `${alert} stays silent in a case`,
      );
    }
    // A misspelt name would pass as "silent" whatever the rules do.
    for (const c of all) assert.ok(alerts.has(c.alertname), `${c.alertname} at ${c.eval_time} is an alert of ${RULES}`);
    for (const expected of all.flatMap((c) => c.exp_alerts)) {
      assert.ok(expected.exp_labels?.severity, 'exp_labels has the severity');
      assert.deepEqual(Object.keys(expected.exp_annotations ?? {}).sort(), ['description', 'runbook_url', 'summary']);
    }
  });

  it('give every alert a severity, a summary, a description, the runbook and a section in docs/alerts.md', () => {
    const docs = read('docs/alerts.md');
    for (const rule of rules()) {
      assert.match(rule.labels?.severity ?? '', /^(warning|critical)$/, rule.alert);
      assert.ok(rule.annotations?.summary && rule.annotations.description, rule.alert);
      assert.match(
        rule.annotations?.runbook_url ?? '',
        /^docs\/(partner-protection\.md|access\.md#auth-failures|personal-data\.md#(retention|stuck-erasures)|operations\.md#per-entity-ordering)$/,
        rule.alert,
      );
      assert.match(docs, new RegExp(`^### ${rule.alert}$`, 'm'), `docs/alerts.md describes ${rule.alert}`);
    }
  });

  it('the Grafana dashboard queries through ${DS_PROMETHEUS}, in PromQL that promtool parses', async () => {
    const dashboard = JSON.parse(read(DASHBOARD)) as {
      templating: { list: { name: string; type: string }[] };
      panels: { title: string; datasource: { uid: string }; targets: { expr: string }[] }[];
    };
    assert.ok(dashboard.templating.list.some((v) => v.name === 'DS_PROMETHEUS' && v.type === 'datasource'));
    for (const panel of dashboard.panels) assert.equal(panel.datasource.uid, '${DS_PROMETHEUS}', panel.title);
    // Each query as a recording rule: promtool check rules parses its expression.
    const records = dashboard.panels
      .flatMap((panel) => panel.targets)
      .map((target, i) => ({
        record: `dashboard:query_${i}`,
        expr: target.expr.replaceAll('$__rate_interval', '5m'),
      }));
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pis-alerts-'));
    try {
      const file = path.join(dir, 'dashboard-queries.yml');
      await writeFile(file, stringify({ groups: [{ name: 'dashboard', rules: records }] }));
      const { code, output } = await promtool('check', 'rules', file);
      assert.equal(code, 0, output);
      assert.match(output, new RegExp(`SUCCESS: ${records.length} rules found`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
