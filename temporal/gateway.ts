import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
  type ConnectionLike,
} from '@temporalio/client';
import { isRefusal, refusalReason } from './grpc-refusal';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { createClientConnections } from './client-connections';
import {
  orderingDecisionUpdate,
  partnerReleasedSignal,
  retryNowUpdate,
  webhookStatusQuery,
} from '../workflows/webhooks/messages';
import type { BlockedDecision } from '../lib/delivery';
import { wakeInOrder } from './ordering-wake';
import {
  erasureWorkflowId,
  recoveryWorkflowId,
  type RetryNowResult,
  type WebhookDeliveryStatus,
} from '../workflows/types';
import { startDeliveryWorkflow, type PreparedWebhook } from './delivery-start';
import { describeError } from '../lib/describe-error';
import { temporalIdentityOf } from '../lib/actor';
import { WebhookConflictError, TemporalSetupError, TemporalUnavailableError } from '../lib/errors';

/**
 * A running delivery's live state (the status query), or a run an operator stopped: cancelled, or terminated
 * (or timed out), which no workflow code could record. Completed runs record themselves: `finished`. `absent`:
 * Temporal has no such workflow, so its start never happened.
 */
export type DeliveryLookup =
  | { readonly kind: 'running'; readonly runId: string; readonly status: WebhookDeliveryStatus }
  | {
      readonly kind: 'stopped';
      readonly runId: string;
      readonly status: 'cancelled' | 'terminated';
      readonly closedAt: string;
    }
  | { readonly kind: 'finished'; readonly runId: string }
  | { readonly kind: 'absent' }
  | { readonly kind: 'unreachable'; readonly reason: string };

/** How a run ended, as Temporal's describe says. */
export type RunEnd = 'completed' | 'failed' | 'cancelled' | 'terminated' | 'timed_out';

/**
 * A workflow's current run by one DescribeWorkflowExecution and no query: running (continued-as-new counts, its
 * next run carries on), ended (how and when), or absent (never started, or deleted).
 */
export type RunState =
  | { readonly kind: 'running'; readonly runId: string }
  | { readonly kind: 'ended'; readonly runId: string; readonly end: RunEnd; readonly closedAt: string }
  | { readonly kind: 'absent' };

const RUN_ENDS: Readonly<Record<string, RunEnd>> = {
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
  TERMINATED: 'terminated',
  TIMED_OUT: 'timed_out',
};

/** Temporal answers NotFound for a run that has closed: an operation on it conflicts with its state. */
function endedRunConflict(error: unknown): unknown {
  return error instanceof WorkflowNotFoundError ? new WebhookConflictError('The delivery has ended.') : error;
}

/**
 * The service's one way to Temporal for a webhook: start its delivery, read its live state, retry it now,
 * cancel it, and close. The API and the CLI use it; tests wrap the real one to see which starts were asked for.
 */
export interface TemporalGateway {
  /**
   * Starts (or finds) the delivery workflow; returns its run id. Throws TemporalUnavailableError for an
   * outage, TemporalSetupError when Temporal refuses the start for its configuration.
   */
  start(webhook: PreparedWebhook): Promise<string>;
  /** Where the workflow stands; `unreachable` when Temporal does not answer. */
  status(workflowId: string): Promise<DeliveryLookup>;
  /**
   * The run of the workflow, whatever its state (one DescribeWorkflowExecution, no query); undefined when
   * Temporal has none. Throws TemporalUnavailableError when Temporal does not answer.
   */
  runOf(workflowId: string): Promise<string | undefined>;
  /** The current run's state (RunState). Throws TemporalUnavailableError when Temporal does not answer. */
  runState(workflowId: string): Promise<RunState>;
  /** Sends the retry-now update. Throws WebhookConflictError when the delivery is not waiting. */
  retryNow(workflowId: string): Promise<RetryNowResult>;
  /** Asks the run to cancel; the workflow records it. Throws WebhookConflictError when the run has ended. */
  cancel(workflowId: string): Promise<void>;
  /** Tells a held delivery that the hold is over; false when its run has ended (nothing to wake). */
  release(workflowId: string): Promise<boolean>;
  /** Wakes a queued ordered delivery (temporal/ordering-wake.ts); false when no run of that id is running. */
  wakeInOrder(workflowId: string): Promise<boolean>;
  /** An operator's skip or retry of a blocked ordered head. Throws WebhookConflictError when it is not blocked. */
  decideBlocked(workflowId: string, decision: BlockedDecision): Promise<void>;
  /**
   * Starts (or finds) the `eraseSubject` workflow of a recorded erasure. Throws TemporalUnavailableError for an outage.
   */
  startErasure(erasureId: string): Promise<void>;
  /** Starts (or finds) the `recoverWebhooks` workflow of a recorded partner recovery; an ended one is left ended. */
  startRecovery(recoveryId: string): Promise<void>;
  /**
   * The same gateway, on the same connection, whose calls carry `actor` in their client identity
   * (temporalIdentityOf), so Temporal's event history and UI show who signalled, updated, cancelled or started.
   */
  actingFor(actor: string): TemporalGateway;
  /** Closes the connection: of every gateway acting for an actor too. */
  close(): Promise<void>;
}

export interface TemporalGatewayOptions {
  readonly connectTimeoutMs?: number;
  /** Deadline of one start call, including the client's own retries. */
  readonly callTimeoutMs?: number;
  /** After a failed connect, later calls fail at once for this long instead of waiting again. */
  readonly failFastMs?: number;
  /**
   * The connection of a worker polling the delivery queue in this process, while it polls. Starts then go
   * through it with eager start: the server hands the first workflow task back in its answer, so the delivery
   * skips a round of task-queue polling (`partner-service start`, where the API and the worker share a process).
   */
  readonly eagerStartVia?: () => ConnectionLike | undefined;
}

/**
 * A gateway that connects lazily on first use, so the API serves while Temporal is down, and reconnects
 * on a later call after a failure.
 */
export function createTemporalGateway(
  config: Config,
  logger: Logger,
  { connectTimeoutMs = 2000, callTimeoutMs = 5000, failFastMs = 5000, eagerStartVia }: TemporalGatewayOptions = {},
): TemporalGateway {
  const { connectAs, eagerStart, close } = createClientConnections(config, logger, {
    connectTimeoutMs,
    callTimeoutMs,
    failFastMs,
    eagerStartVia,
  });

  function gatewayAs(identity: string | undefined): TemporalGateway {
    /** One call with the call deadline; an outage or a call without answer is TemporalUnavailableError. */
    async function call<T>(work: (client: Client) => Promise<T>): Promise<T> {
      const { connection, client } = await connectAs(identity);
      try {
        return await connection.withDeadline(Date.now() + callTimeoutMs, () => work(client));
      } catch (error) {
        if (error instanceof WebhookConflictError) throw error;
        throw new TemporalUnavailableError(`the call did not complete (${describeError(error)})`, true);
      }
    }

    /**
     * Starts (or finds) one of the service's own workflows whose id names its record (an erasure, a recovery): a
     * second start of a running one is the same run; of an ended one, nothing. TemporalUnavailableError for an outage.
     */
    async function startOwnWorkflow(
      workflowType: 'eraseSubject' | 'recoverWebhooks',
      workflowId: string,
      args: unknown[],
      { what, summary, endedStaysEnded = false }: { what: string; summary: string; endedStaysEnded?: boolean },
    ): Promise<void> {
      const { connection, client } = await connectAs(identity);
      try {
        await connection.withDeadline(Date.now() + callTimeoutMs, () =>
          client.workflow.start(workflowType, {
            workflowId,
            taskQueue: config.TEMPORAL_TASK_QUEUE,
            args,
            workflowIdConflictPolicy: 'USE_EXISTING',
            ...(endedStaysEnded && { workflowIdReusePolicy: 'REJECT_DUPLICATE' as const }),
            staticSummary: summary,
          }),
        );
      } catch (error) {
        if (error instanceof WorkflowExecutionAlreadyStartedError) return;
        if (isRefusal(error))
          throw new TemporalSetupError(`Temporal refused to start the ${what} workflow: ${refusalReason(error)}`);
        throw new TemporalUnavailableError(`the ${what} workflow could not be started (${describeError(error)})`, true);
      }
    }

    return {
      async start(webhook) {
        // Eager starts are ingestion's, under the default identity; an actor's start (a redelivery) goes through its
        // own client.
        const eager = identity === undefined ? eagerStart() : undefined;
        const { connection, client } = eager ?? (await connectAs(identity));
        try {
          return await connection.withDeadline(Date.now() + callTimeoutMs, () =>
            startDeliveryWorkflow(client, webhook, config.TEMPORAL_TASK_QUEUE, { eager: eager !== undefined }),
          );
        } catch (error) {
          logger.error({ err: error, workflowId: webhook.workflowId }, 'starting the webhook workflow failed');
          if (isRefusal(error))
            throw new TemporalSetupError(`Temporal refused to start the webhook workflow: ${refusalReason(error)}`);
          throw new TemporalUnavailableError(`the workflow could not be started (${describeError(error)})`, true);
        }
      },
      async status(workflowId) {
        try {
          return await call(async (client): Promise<DeliveryLookup> => {
            const handle = client.workflow.getHandle(workflowId);
            const description = await handle.describe().catch((error: unknown) => {
              if (error instanceof WorkflowNotFoundError) return undefined;
              throw error;
            });
            if (!description) return { kind: 'absent' };
            const { runId } = description;
            const closedAt = (description.closeTime ?? new Date()).toISOString();
            switch (description.status.name) {
              case 'RUNNING':
                return { kind: 'running', runId, status: await handle.query(webhookStatusQuery) };
              case 'CANCELLED':
                return { kind: 'stopped', runId, status: 'cancelled', closedAt };
              case 'TERMINATED':
              case 'TIMED_OUT':
                return { kind: 'stopped', runId, status: 'terminated', closedAt };
              default:
                return { kind: 'finished', runId };
            }
          });
        } catch (error) {
          logger.debug({ err: error, workflowId }, 'status lookup failed');
          return {
            kind: 'unreachable',
            reason: error instanceof TemporalUnavailableError ? error.reason : describeError(error),
          };
        }
      },
      async runOf(workflowId) {
        return call((client) =>
          client.workflow
            .getHandle(workflowId)
            .describe()
            .then(
              (description) => description.runId,
              (error: unknown) => {
                if (error instanceof WorkflowNotFoundError) return undefined;
                throw error;
              },
            ),
        );
      },
      async runState(workflowId) {
        return call(async (client): Promise<RunState> => {
          const description = await client.workflow
            .getHandle(workflowId)
            .describe()
            .catch((error: unknown) => {
              if (error instanceof WorkflowNotFoundError) return undefined;
              throw error;
            });
          if (!description) return { kind: 'absent' };
          const end = RUN_ENDS[description.status.name];
          if (!end) return { kind: 'running', runId: description.runId };
          return {
            kind: 'ended',
            runId: description.runId,
            end,
            closedAt: (description.closeTime ?? new Date()).toISOString(),
          };
        });
      },
      async retryNow(workflowId) {
        return call((client) =>
          client.workflow
            .getHandle(workflowId)
            .executeUpdate(retryNowUpdate)
            .catch((error: unknown) => {
              // The validator's rejection, or a run that predates retry-now (no handler): nothing to cut short.
              if (error instanceof WorkflowUpdateFailedError)
                throw new WebhookConflictError(`Not waiting for a retry: ${error.cause?.message ?? error.message}`);
              throw endedRunConflict(error);
            }),
        );
      },
      async cancel(workflowId) {
        await call((client) =>
          client.workflow
            .getHandle(workflowId)
            .cancel()
            .catch((error: unknown) => Promise.reject(endedRunConflict(error))),
        );
      },
      async release(workflowId) {
        return call((client) =>
          client.workflow
            .getHandle(workflowId)
            .signal(partnerReleasedSignal)
            .then(
              () => true,
              (error: unknown) => {
                if (error instanceof WorkflowNotFoundError) return false;
                throw error;
              },
            ),
        );
      },
      async wakeInOrder(workflowId) {
        return call((client) =>
          wakeInOrder(client.workflowService, config.temporal.namespace, workflowId, client.options.identity),
        );
      },
      async decideBlocked(workflowId, decision) {
        await call((client) =>
          client.workflow
            .getHandle(workflowId)
            .executeUpdate(orderingDecisionUpdate, { args: [decision] })
            .catch((error: unknown) => {
              if (error instanceof WorkflowUpdateFailedError)
                throw new WebhookConflictError(`Not blocked: ${error.cause?.message ?? error.message}`);
              throw endedRunConflict(error);
            }),
        );
      },
      startErasure(erasureId) {
        return startOwnWorkflow('eraseSubject', erasureWorkflowId(erasureId), [{ erasureId }], {
          what: 'erasure',
          summary: "erasure of a subject's webhooks",
        });
      },
      startRecovery(recoveryId) {
        return startOwnWorkflow('recoverWebhooks', recoveryWorkflowId(recoveryId), [{ recoveryId }], {
          what: 'recovery',
          summary: "a partner's recovery of its webhooks",
          endedStaysEnded: true,
        });
      },
      actingFor(actor) {
        return gatewayAs(temporalIdentityOf(actor));
      },
      close,
    };
  }

  return gatewayAs(undefined);
}
