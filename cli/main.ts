#!/usr/bin/env node
import 'dotenv/config';
// First after .env: tracing has to be set up before any module loads pg.
import { tracingStartError } from './start-tracing';
import { flushTracing } from '../lib/tracing';
import { type Command } from './command';
import { failureOf } from './errors';
import { commands } from './commands';
import { UsageError, FailedCommand } from '../lib/errors';

function globalHelp(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Usage: partner-service <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Run `partner-service <command> --help` for the options of one command.',
    'Add --verbose to any command to see its info log lines (and the stack of an unexpected error).',
    'Configuration comes from environment variables (and an optional .env file); see README.md.',
  ].join('\n');
}

/** Taken out of the arguments wherever it stands: `partner-service --verbose webhooks list` or `… list --verbose`. */
const VERBOSE = '--verbose';

export async function main(argv: string[]): Promise<number> {
  const verbose = argv.includes(VERBOSE);
  const [name, ...args] = argv.filter((arg) => arg !== VERBOSE);
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${globalHelp()}\n`);
    return name ? 0 : 2;
  }
  const command: Command | undefined = commands.find((c) => c.name === name);
  if (!command) return fail(new UsageError(`unknown command "${name}"`), { usage: globalHelp() }, verbose);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  try {
    if (tracingStartError) throw tracingStartError;
    return await command.run(args, { verbose });
  } catch (error) {
    // The command has cleaned up after itself: what is left is to say what failed, once.
    return fail(error, command, verbose);
  } finally {
    // A one-shot command exits next: its spans leave now. A service keeps running and flushes at shutdown.
    await flushTracing();
  }
}

function fail(error: unknown, command: FailedCommand, verbose: boolean): number {
  const { exitCode, message } = failureOf(error, command, { verbose });
  process.stderr.write(`${message}\n`);
  return exitCode;
}

if (require.main === module) {
  // A failed command has already cleaned up; exit explicitly so no library exit hook can replace the code.
  main(process.argv.slice(2)).then(
    (code) => {
      if (code !== 0) process.exit(code);
    },
    // Only flushing the spans can fail after the map: it is unexpected, and said the same way.
    (error: unknown) => process.exit(fail(error, { usage: globalHelp() }, false)),
  );
}
