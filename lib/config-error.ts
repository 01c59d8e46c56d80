/** Thrown when the environment does not describe a valid configuration; the CLI prints its one line and exits 1. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
