import type { Logger } from './logger';

type Step = { name: string; run: () => Promise<void> | void; withPrevious: boolean };

export interface StepOptions {
  /**
   * Stops at the same time as the step registered just before it, rather than after it: for independent
   * child processes (PostgreSQL and the Temporal dev server), whose stops take most of a shutdown.
   */
  readonly withPrevious?: boolean;
}

/**
 * Ordered graceful shutdown. Steps run in reverse order of registration (the last thing started stops
 * first), each awaited, on SIGINT or SIGTERM or when `shutdown()` is called. A second signal exits at once.
 *
 * A signal may come while the command is still starting: `signal` aborts at once, every start-up step given
 * it gives up (killing what it had begun), and the steps run once the start-up has unwound, so that what it
 * registered last is stopped too.
 */
export class Shutdown {
  private readonly steps: Step[] = [];
  private readonly stopping = new AbortController();
  private startup: Promise<unknown> = Promise.resolve();
  private running: Promise<void> | undefined;

  constructor(private readonly logger: Logger) {}

  /** Aborts when the shutdown begins: the start-up steps' cue to give up. */
  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  add(name: string, run: Step['run'], { withPrevious = false }: StepOptions = {}): void {
    this.steps.push({ name, run, withPrevious });
  }

  /** Runs the command's start-up; a shutdown waits for it to settle before it runs the steps. */
  starting<T>(body: () => Promise<T>): Promise<T> {
    const started = body();
    this.startup = started.catch(() => undefined);
    return started;
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
    this.stopping.abort();
    this.running ??= (async () => {
      await this.startup;
      for (const batch of this.batches()) await Promise.all(batch.map((step) => this.stop(step)));
    })();
    return this.running;
  }

  /** The steps, last registered first, with each step marked `withPrevious` in one batch with the one before it. */
  private batches(): Step[][] {
    const batches: Step[][] = [];
    let joinNext = false;
    for (const step of [...this.steps].reverse()) {
      if (joinNext) batches[batches.length - 1].push(step);
      else batches.push([step]);
      joinNext = step.withPrevious;
    }
    return batches;
  }

  private async stop(step: Step): Promise<void> {
    try {
      await step.run();
      this.logger.debug({ step: step.name }, 'stopped');
    } catch (error) {
      this.logger.error({ err: error, step: step.name }, 'shutdown step failed');
    }
  }
}
