import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

/** The compiled CLI; `npm test` builds it first. */
export const CLI = path.join(__dirname, '..', '..', 'dist', 'cli', 'main.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `partner-service ...args` to completion with exactly `env` (plus nothing inherited). */
export function runCli(args: string[], env: NodeJS.ProcessEnv, cwd?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, cwd });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts a long-running CLI command and resolves once a stdout log line matches `ready`. */
export function startCli(args: string[], env: NodeJS.ProcessEnv, cwd: string, ready: RegExp, timeoutMs = 60_000) {
  const child = spawn(process.execPath, [CLI, ...args], { env, cwd });
  const output = { stdout: '', stderr: '' };
  child.stderr.on('data', (d) => (output.stderr += d));
  const started = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`not ready after ${timeoutMs} ms:\n${output.stdout}\n${output.stderr}`)),
      timeoutMs,
    );
    child.stdout.on('data', (d) => {
      output.stdout += d;
      if (ready.test(output.stdout)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before it was ready:\n${output.stdout}\n${output.stderr}`));
    });
  });
  return { child, output, started };
}

export function waitForExit(child: ChildProcess): Promise<number | null> {
  // A child killed by a signal has exited with exitCode null: its 'exit' event will not come again.
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
}

/**
 * Runs `partner-service ...args` from the sources (tsx, no build needed) with exactly `env` plus PATH, and `stdin`
 * as its standard input when given; never rejects.
 */
export async function runSourceCli(
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const options = { cwd: path.join(__dirname, '..', '..'), env: { PATH: process.env.PATH ?? '', ...env } };
  try {
    const running = promisify(execFile)(process.execPath, ['--require', 'tsx/cjs', 'cli/main.ts', ...args], options);
    if (stdin !== undefined) running.child.stdin?.end(stdin);
    const { stdout, stderr } = await running;
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
