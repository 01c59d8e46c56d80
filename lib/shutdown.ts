import type { Logger } from './logger';

type Step = { name: string; run: () => Promise<void> | void };

/**
 * Ordered graceful shutdown. Steps run in reverse order of registration (the last thing started stops
 * first), each awaited, on SIGINT or SIGTERM or when `shutdown()` is called. A second signal exits at once.
 */
export class Shutdown {
  private readonly steps: Step[] = [];
  private running: Promise<void> | undefined;

  constructor(private readonly logger: Logger) {}

  add(name: string, run: Step['run']): void {
    this.steps.push({ name, run });
  }

  listen(): void {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.on(signal, () => {
        if (this.running) {
          this.logger.warn({ signal }, 'second signal: exiting immediately');
          process.exit(1);
        }
        this.logger.info({ signal }, 'shutting down');
        void this.shutdown().then(() => process.exit(0));
      });
    }
  }

  shutdown(): Promise<void> {
    this.running ??= (async () => {
      for (const step of [...this.steps].reverse()) {
        try {
          await step.run();
          this.logger.debug({ step: step.name }, 'stopped');
        } catch (error) {
          this.logger.error({ err: error, step: step.name }, 'shutdown step failed');
        }
      }
    })();
    return this.running;
  }
}
