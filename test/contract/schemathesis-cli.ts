// Runs the pinned schemathesis CLI (scripts/install-schemathesis.sh) as a child process and reads its summary.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
export const SCHEMATHESIS = path.join(ROOT, '.schemathesis', 'venv', 'bin', 'schemathesis');
export const CONFIG_FILE = path.join(__dirname, 'schemathesis.toml');

export interface SchemathesisRun {
  readonly exitCode: number | null;
  readonly output: string;
  /** From the SUMMARY section to the end: what the test prints. */
  readonly summary: string;
  /** "Selected: 24/24" and "Tested: 24" of the summary. */
  readonly selected?: { readonly count: number; readonly of: number };
  readonly tested?: number;
}

/** A missing CLI is a failure with the command that installs it, never a skip. */
export function requireSchemathesis(): string {
  if (!existsSync(SCHEMATHESIS))
    throw new Error(`${SCHEMATHESIS} not found: run scripts/install-schemathesis.sh (npm test's pretest does)`);
  return SCHEMATHESIS;
}

export function runSchemathesis(args: readonly string[], env: Record<string, string>): Promise<SchemathesisRun> {
  const executable = requireSchemathesis();
  return new Promise((resolve, reject) => {
    // --config-file goes before `run`; no colour, so the summary can be read.
    const child = spawn(executable, ['--config-file', CONFIG_FILE, 'run', '--no-color', ...args], {
      cwd: ROOT,
      // Hypothesis keeps its caches (Unicode tables) beside the venv, not in the checkout's root.
      env: {
        ...process.env,
        ...env,
        NO_COLOR: '1',
        PYTHONUNBUFFERED: '1',
        HYPOTHESIS_STORAGE_DIRECTORY: path.join(ROOT, '.schemathesis', 'hypothesis'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('close', (exitCode) => {
      const start = output.search(/^=+ SUMMARY =+$/m);
      const summary = start >= 0 ? output.slice(start).trimEnd() : '';
      const selected = /Selected: (\d+)\/(\d+)/.exec(summary);
      const tested = /Tested: (\d+)/.exec(summary);
      resolve({
        exitCode,
        output,
        summary,
        selected: selected ? { count: Number(selected[1]), of: Number(selected[2]) } : undefined,
        tested: tested ? Number(tested[1]) : undefined,
      });
    });
  });
}
