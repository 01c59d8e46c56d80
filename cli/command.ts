/** What main() read for every command: `--verbose`, taken out of the arguments before the command sees them. */
export interface CommandContext {
  readonly verbose: boolean;
}

/** One `partner-service` subcommand. `run` returns the process exit code, or throws for main's error map (cli/errors.ts). */
export interface Command {
  readonly name: string;
  /** One line for `--help`. */
  readonly summary: string;
  /** Usage line(s) and options, printed by `partner-service NAME --help`. */
  readonly usage: string;
  run(args: string[], context: CommandContext): Promise<number>;
}

/** Thrown for bad command-line usage; main prints the message and the command's usage, exit code 2. */
export class UsageError extends Error {}

/**
 * A command's expected failure that no error class of the layers below names (no partner endpoint to deliver
 * to, no such app): main prints the message as it is, exit code 1.
 */
export class CommandFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommandFailure';
  }
}
