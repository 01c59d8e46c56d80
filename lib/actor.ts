import os from 'node:os';

// Who made a change, as the audit trail and Temporal's event histories name them: a named token's name, the
// shared INTERNAL_API_TOKEN, or the operating-system user of a CLI command.

/** The actor of a request made with the shared INTERNAL_API_TOKEN. */
export const SHARED_TOKEN_ACTOR = 'INTERNAL_API_TOKEN';

/** The actor of a CLI command: `cli:<user>@<host>`. */
export function cliActor(): string {
  let user: string;
  try {
    user = os.userInfo().username;
  } catch {
    user = process.env.USER ?? 'unknown';
  }
  return `cli:${user}@${os.hostname()}`;
}

/**
 * The identity a Temporal client acting for `actor` gives its calls (signals, updates, cancels, starts), so
 * Temporal UI shows who acted and through which process.
 */
export const temporalIdentityOf = (actor: string): string =>
  `${actor} via partner-service ${process.pid}@${os.hostname()}`;
