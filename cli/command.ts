import type { AuditAction } from '../lib/vocabulary';
import { UsageError } from '../lib/errors';

/** What main() read for every command: `--verbose`, taken out of the arguments before the command sees them. */
export interface CommandContext {
  readonly verbose: boolean;
}

/**
 * One `partner-service` subcommand. `run` returns the process exit code, or throws for main's error map
 * (cli/errors.ts).
 */
export interface Command {
  readonly name: string;
  /** One line for `--help`. */
  readonly summary: string;
  /** Usage line(s) and options, printed by `partner-service NAME --help`. */
  readonly usage: string;
  /**
   * What each subcommand (`''`: the command itself) writes to the audit trail; empty for one that reads, or
   * runs the service. The least-privilege drill checks every listed action in a real trail.
   */
  readonly auditActions: Readonly<Record<string, readonly AuditAction[]>>;
  run(args: string[], context: CommandContext): Promise<number>;
}

/**
 * The subcommand `args` names in `table`, with the arguments after it and its name; a UsageError says which
 * names are expected, or that the one given is unknown.
 */
export function subcommandOf<T>(
  args: readonly string[],
  table: Readonly<Record<string, T>>,
): { readonly subcommand: T; readonly rest: string[]; readonly name: string } {
  const [name, ...rest] = args;
  if (name === undefined || !Object.hasOwn(table, name)) {
    const names = Object.keys(table);
    const expected = names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : names[0];
    throw new UsageError(name === undefined ? `expected ${expected}` : `unknown subcommand "${name}"`);
  }
  return { subcommand: table[name], rest, name };
}
