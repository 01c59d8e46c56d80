/** One `partner-service` subcommand. `run` returns the process exit code. */
export interface Command {
  readonly name: string;
  /** One line for `--help`. */
  readonly summary: string;
  /** Usage line(s) and options, printed by `partner-service NAME --help`. */
  readonly usage: string;
  run(args: string[]): Promise<number>;
}

/** Thrown for bad command-line usage; main prints the message and the command's usage, exit code 2. */
export class UsageError extends Error {}
