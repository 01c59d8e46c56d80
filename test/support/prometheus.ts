// A real Prometheus server for a test: Debian's `prometheus` binary (scripts/install-test-servers.sh installs
// it with promtool), on a free loopback port, scraping and evaluating every second, its TSDB in a temp folder.
// A missing binary is a failure: there is no skip.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { findFreePort } from '../../lib/ports';
import { waitForExit } from './cli';
import { eventually } from './eventually';

/** One entry of /api/v1/alerts: a rule whose expression is true, `pending` during its `for:`, then `firing`. */
export interface PrometheusAlert {
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly state: 'pending' | 'firing';
  readonly activeAt: string;
  readonly value: string;
}

export interface PrometheusServer {
  readonly url: string;
  readonly process: ChildProcess;
  /** Every active alert, pending or firing. */
  alerts(): Promise<PrometheusAlert[]>;
  /** An instant query's samples: labels and value. */
  query(expr: string): Promise<{ metric: Record<string, string>; value: number }[]>;
  /** The loaded alerting rules: name, health (`ok` once evaluated without error) and the last error. */
  rules(): Promise<{ name: string; health: string; lastError?: string }[]>;
  /** The scrape targets' health (`up`, `down`, `unknown`), by scrape URL. */
  targets(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

export interface PrometheusOptions {
  /** A folder of the test's own: the configuration and the TSDB go there. */
  readonly work: string;
  /** Absolute path of the rules file to load. */
  readonly rulesFile: string;
  /** host:port of each process to scrape at /metrics. */
  readonly targets: readonly string[];
}

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return ((await response.json()) as { data: T }).data;
}

export async function startPrometheus({ work, rulesFile, targets }: PrometheusOptions): Promise<PrometheusServer> {
  const port = await findFreePort();
  const config = path.join(work, 'prometheus.yml');
  const storage = path.join(work, 'tsdb');
  await mkdir(storage, { recursive: true });
  await writeFile(
    config,
    stringify({
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [rulesFile],
      scrape_configs: [{ job_name: 'partner-service', static_configs: [{ targets }] }],
    }),
  );
  const child = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${storage}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const spawned = new Promise<void>((resolve, reject) => {
    child.on('spawn', resolve);
    child.on('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'ENOENT'
          ? new Error(
              "prometheus not found: run scripts/install-test-servers.sh (it installs Debian's prometheus package)",
            )
          : error,
      ),
    );
  });
  await spawned;
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await waitForExit(child);
  };
  try {
    await eventually(
      'prometheus ready',
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}:\n${stderr}`);
        return fetch(`${url}/-/ready`).then(
          (r) => r.ok,
          () => false,
        );
      },
      30_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    process: child,
    alerts: async () => (await getJson<{ alerts: PrometheusAlert[] }>(`${url}/api/v1/alerts`)).alerts,
    query: async (expr) => {
      const { result } = await getJson<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
        `${url}/api/v1/query?query=${encodeURIComponent(expr)}`,
      );
      return result.map(({ metric, value }) => ({ metric, value: Number(value[1]) }));
    },
    rules: async () => {
      const { groups } = await getJson<{
        groups: { rules: { type: string; name: string; health: string; lastError?: string }[] }[];
      }>(`${url}/api/v1/rules`);
      return groups.flatMap((group) => group.rules).filter((rule) => rule.type === 'alerting');
    },
    targets: async () => {
      const { activeTargets } = await getJson<{ activeTargets: { scrapeUrl: string; health: string }[] }>(
        `${url}/api/v1/targets`,
      );
      return Object.fromEntries(activeTargets.map((t) => [t.scrapeUrl, t.health]));
    },
    stop,
  };
}
