import {
  Client,
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  type ScheduleOptionsStartWorkflowAction,
  type ScheduleUpdateOptions,
} from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { Config } from '../lib/config';
import {
  RETENTION_INTERVAL,
  RETENTION_WORKFLOW_TYPE,
  retentionScheduleId,
  type RetentionInput,
} from '../lib/retention';
import { dataConverterFor } from '../temporal/settings';
import { readNamespaceRetention } from '../temporal/namespace-retention';
import { recordNamespaceRetention } from '../store/personal-data/temporal-namespaces';
import type { WorkerDependencies } from './worker-options';

const DAY_MS = 86_400_000;

/** The schedule's definition: what every worker of the task queue writes, so they all agree. */
function retentionSchedule(
  config: Config,
): Omit<
  ScheduleUpdateOptions<ScheduleOptionsStartWorkflowAction<(input: RetentionInput) => Promise<unknown>>>,
  'state'
> {
  const taskQueue = config.TEMPORAL_TASK_QUEUE;
  return {
    spec: { intervals: [{ every: RETENTION_INTERVAL }] },
    action: {
      type: 'startWorkflow',
      workflowType: RETENTION_WORKFLOW_TYPE,
      taskQueue,
      // The schedule appends the action's time, so each run has an id of its own.
      workflowId: retentionScheduleId(taskQueue),
      args: [{ trigger: 'schedule' }],
      staticSummary:
        `webhook retention: bodies after ${config.WEBHOOK_PAYLOAD_RETENTION_DAYS} days, rows after ` +
        `${config.WEBHOOK_LOG_RETENTION_DAYS} days`,
    },
    // A run still going when the next is due (a big backlog) goes on alone; a missed hour is not made up.
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: RETENTION_INTERVAL },
  };
}

/**
 * Creates the task queue's retention schedule, or updates it to this worker's settings when it exists: one
 * schedule id per task queue, so any number of workers starting at once leave exactly one. An operator's
 * pause (Temporal UI or CLI) survives the update.
 */
export async function ensureRetentionSchedule(
  connection: NativeConnection,
  config: Config,
): Promise<'created' | 'updated'> {
  const client = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter: dataConverterFor(config),
  });
  const scheduleId = retentionScheduleId(config.TEMPORAL_TASK_QUEUE);
  const definition = retentionSchedule(config);
  try {
    await client.schedule.create({ scheduleId, ...definition });
    return 'created';
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    await client.schedule
      .getHandle(scheduleId)
      .update((previous) => ({ ...definition, state: { paused: previous.state.paused, note: previous.state.note } }));
    return 'updated';
  }
}

/**
 * Temporal keeps a closed run, with the event in its history, for the namespace's retention (`retentionSeconds`):
 * longer than WEBHOOK_PAYLOAD_RETENTION_DAYS means the body outlives its purge there (encrypted with
 * PAYLOAD_ENCRYPTION_KEYS, but kept). One warning line at start says so; undefined otherwise.
 */
export function namespaceRetentionWarning(retentionSeconds: number | undefined, config: Config): string | undefined {
  const namespace = config.temporal.namespace;
  if (!retentionSeconds) return undefined;
  const days = retentionSeconds / (DAY_MS / 1000);
  if (days <= config.WEBHOOK_PAYLOAD_RETENTION_DAYS) return undefined;
  return (
    `Temporal namespace ${namespace} keeps closed workflow runs for ${days} days, ` +
    `longer than WEBHOOK_PAYLOAD_RETENTION_DAYS (${config.WEBHOOK_PAYLOAD_RETENTION_DAYS}): ` +
    `webhook bodies stay in those runs' histories until then; shorten it with ` +
    `temporal operator namespace update -n ${namespace} --retention ${config.WEBHOOK_PAYLOAD_RETENTION_DAYS * 24}h`
  );
}

/**
 * The retention schedule of this task queue (created, or updated to this worker's settings), the namespace's
 * retention recorded for the log purge, and one warning line when Temporal keeps closed runs longer than the
 * payload retention. Neither stops delivery: a failure
 * is logged, and the next start tries again.
 */
export async function setUpRetention(
  connection: NativeConnection,
  { config, logger, knex }: WorkerDependencies,
): Promise<void> {
  const scheduleId = retentionScheduleId(config.TEMPORAL_TASK_QUEUE);
  try {
    const outcome = await ensureRetentionSchedule(connection, config);
    logger.info({ scheduleId, every: RETENTION_INTERVAL }, `retention schedule ${outcome}`);
  } catch (error) {
    logger.error(
      { err: error, scheduleId },
      'the retention schedule could not be created or updated: the purge does not run on its own until a worker ' +
        'starts with it',
    );
  }
  try {
    const retentionSeconds = await readNamespaceRetention(connection.workflowService, config.temporal.namespace);
    // The log purge keeps a row while Temporal may still hold its run (docs/personal-data.md#temporals-copy).
    if (retentionSeconds !== undefined)
      await recordNamespaceRetention(knex, config.temporal.namespace, retentionSeconds);
    const warning = namespaceRetentionWarning(retentionSeconds, config);
    if (warning) logger.warn(warning);
  } catch (error) {
    logger.warn({ err: error }, 'could not read the Temporal namespace retention (DescribeNamespace)');
  }
}
