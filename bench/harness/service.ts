import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';

/** Compiled (build/bench/harness) or under tsx (bench/harness) alike, the CLI is the build's dist/cli/main.js. */
const ROOT = path.resolve(__dirname, path.extname(__filename) === '.ts' ? '../..' : '../../..');
const CLI = path.join(ROOT, 'dist', 'cli', 'main.js');
/** The build's prebuilt workflow bundle, which `partner-service worker` runs. */
export const WORKFLOW_BUNDLE = path.join(ROOT, 'dist', 'workflow-bundle.js');

export interface ServiceProcess {
  readonly command: string;
  readonly pid: number;
  /** Throws when the process has ended, so waits fail fast instead of timing out. */
  assertRunning(): void;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Runs `node dist/cli/main.js <command>` (the real `partner-service` program) as its own process; `nodeArgs`
 * go to node before the script (e.g. --cpu-prof). `root` is another built checkout's, to measure earlier code;
 * `onLine` sees each line of its standard output.
 */
export function spawnService(
  command: 'api' | 'worker' | 'start',
  env: NodeJS.ProcessEnv,
  nodeArgs: readonly string[] = [],
  root = ROOT,
  onLine?: (line: string) => void,
): ServiceProcess {
  const cli = root === ROOT ? CLI : path.join(root, 'dist', 'cli', 'main.js');
  const child = spawn(process.execPath, [...nodeArgs, cli, command], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // The worker warns once per failed attempt (thousands in a run): pass on only errors, keep a tail for a crash.
  let tail: string[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    tail = [...tail.slice(-19), line];
    onLine?.(line);
    if (/"level":[56]0\b/.test(line)) process.stderr.write(`${line}\n`);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // A crash of the benchmark must not leave the service running.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const exitStatus = () => (child.exitCode !== null ? `code ${child.exitCode}` : (child.signalCode ?? undefined));
  return {
    command,
    pid: child.pid!,
    assertRunning() {
      const status = exitStatus();
      if (status)
        throw new Error(`partner-service ${command} exited (${status}); its last log lines:\n${tail.join('\n')}`);
    },
    async stop(graceMs = 20_000) {
      process.off('exit', killOnExit);
      if (exitStatus()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
