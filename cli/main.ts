#!/usr/bin/env node
import 'dotenv/config';
// First after .env: tracing has to be set up before any module loads pg.
import { tracingStartError } from './start-tracing';
import { ConfigError } from '../lib/config';
import { describeError } from '../lib/describe-error';
import { flushTracing } from '../lib/tracing';
import { UsageError, type Command } from './command';
import { commands } from './commands';

function globalHelp(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Usage: partner-service <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Run `partner-service <command> --help` for the options of one command.',
    'Configuration comes from environment variables (and an optional .env file); see README.md.',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${globalHelp()}\n`);
    return name ? 0 : 2;
  }
  const command: Command | undefined = commands.find((c) => c.name === name);
  if (!command) {
    process.stderr.write(`partner-service: unknown command "${name}"\n\n${globalHelp()}\n`);
    return 2;
  }
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  try {
    if (tracingStartError) throw tracingStartError;
    return await command.run(args);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      return 1;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`partner-service ${name}: ${error.message}\n\n${command.usage}\n`);
      return 2;
    }
    throw error;
  } finally {
    // A one-shot command exits next: its spans leave now. A service keeps running and flushes at shutdown.
    await flushTracing();
  }
}

if (require.main === module) {
  // A failed command has already cleaned up; exit explicitly so no library exit hook can replace the code.
  main(process.argv.slice(2)).then(
    (code) => {
      if (code !== 0) process.exit(code);
    },
    (error: unknown) => {
      process.stderr.write(`partner-service: ${describeError(error)}\n`);
      process.exit(1);
    },
  );
}
