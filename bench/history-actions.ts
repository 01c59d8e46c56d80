import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection } from '@temporalio/worker';
import type { Knex } from 'knex';
import { startWebhook } from '../application/start-webhook';
import type { WebhookEventInput } from '../events/envelope';
import { loadConfig } from '../lib/config';
import { createLogger } from '../lib/logger';
import { ensureSearchAttributes } from '../temporal/register-search-attributes';
import { startTestWorker } from '../test/support/temporal';
import { installTemporalRuntime } from '../worker/temporal-runtime';
import type { deliverWebhook } from '../workflows/deliver-webhook';
import type { PartnerServer } from './partner-server';
import { startBenchTemporal } from './temporal-server';

const { EventType } = temporal.api.enums.v1;
/** The tests' workflow interceptor that fires every timer after a thousandth of its duration. */
const COMPRESS_TIMERS = require.resolve('../test/webhooks/support/compress-timers');
const DELIVERY_TIMEOUT_MS = 120_000;

/** What one workflow history costs in Temporal actions (as Temporal Cloud bills them) and events. */
export interface ActionCounts {
  readonly events: number;
  readonly workflowTasksCompleted: number;
  /** The workflow's own start, and child workflows started. */
  readonly starts: number;
  /** ActivityTaskScheduled events. */
  readonly activities: number;
  /** Attempts of scheduled activities beyond their first: each is billed as an action. */
  readonly activityRetries: number;
  /** MarkerRecorded events of core's local activities. */
  readonly localActivities: number;
  readonly timers: number;
  readonly upserts: number;
  /** Signals received or sent, and updates accepted. */
  readonly signalsAndUpdates: number;
  /** Every figure above except events and workflow tasks, added up. */
  readonly actions: number;
}

/** Counts from the history alone, so the figures follow the workflow code as it changes. */
export function countActions(history: temporal.api.history.v1.IHistory): ActionCounts {
  const events = history.events ?? [];
  const count = (...types: temporal.api.enums.v1.EventType[]) => events.filter((e) => types.includes(e.eventType ?? EventType.EVENT_TYPE_UNSPECIFIED)).length;
  const figures = {
    starts: count(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED),
    activities: count(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
    activityRetries: events.reduce((sum, e) => sum + Math.max(0, (e.activityTaskStartedEventAttributes?.attempt ?? 1) - 1), 0),
    localActivities: events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length,
    timers: count(EventType.EVENT_TYPE_TIMER_STARTED),
    upserts: count(EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES),
    signalsAndUpdates: count(
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
      EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
    ),
  };
  return {
    events: events.length,
    workflowTasksCompleted: count(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
    ...figures,
    actions: Object.values(figures).reduce((sum, n) => sum + n, 0),
  };
}

/** The history of one delivery, with how many POSTs the partner got and how it ended. */
export interface DeliveryHistory {
  readonly posts: number;
  readonly status: string;
  readonly counts: ActionCounts;
}

/**
 * The service's own workflow and activities (webhookWorkerOptions, through the tests' startTestWorker) on a
 * worker in this process against a fresh dev server, every timer 1000 times shorter: one webhook the partner
 * takes at once, and one it refuses every time, whose real timers would take 1110 s. Each is started with
 * startWebhook, as an upstream system would.
 */
export async function isolatedDeliveryHistories(options: {
  executable: string;
  knex: Knex;
  partner: PartnerServer;
  partnerAccessToken: string;
  event: WebhookEventInput;
}): Promise<{ firstTry: DeliveryHistory; failing: DeliveryHistory }> {
  const { partner } = options;
  // Errors only: the refused delivery's four attempts would each log a warning.
  const logger = createLogger('error');
  // Before any NativeConnection: the default runtime would log to the console and take over SIGINT/SIGTERM.
  installTemporalRuntime(logger);
  const temporalServer = await startBenchTemporal(options.executable);
  const address = temporalServer.server.address;
  const native = await NativeConnection.connect({ address });
  const connection = await Connection.connect({ address });
  try {
    await ensureSearchAttributes(connection, 'default');
    const config = loadConfig({
      TEMPORAL_ADDRESS: address,
      TEMPORAL_TASK_QUEUE: `bench-history-${randomUUID()}`,
      PARTNER_ENDPOINT: `${partner.url}/webhooks`,
      PARTNER_ACCESS_TOKEN: options.partnerAccessToken,
      LOG_LEVEL: 'warn',
    });
    const worker = await startTestWorker({ config, knex: options.knex, logger }, native, { interceptorModules: [COMPRESS_TIMERS] });
    try {
      const client = new Client({ connection });
      const deliver = async (failAlways: boolean): Promise<DeliveryHistory> => {
        partner.reset({ failFirst: false, failAlways });
        const event = { ...options.event, event_id: `history-${randomUUID()}` };
        const { workflowId, webhookId } = await startWebhook(client, event, { taskQueue: config.TEMPORAL_TASK_QUEUE });
        const handle = client.workflow.getHandle<typeof deliverWebhook>(workflowId);
        // A stuck delivery must not hang the bench: terminating it makes result() throw.
        const timer = setTimeout(() => void handle.terminate(`not finished within ${DELIVERY_TIMEOUT_MS / 1000} s`).catch(() => undefined), DELIVERY_TIMEOUT_MS);
        const { status } = await handle.result().finally(() => clearTimeout(timer));
        return { posts: partner.receipts.get(webhookId)?.length ?? 0, status, counts: countActions(await handle.fetchHistory()) };
      };
      return { firstTry: await deliver(false), failing: await deliver(true) };
    } finally {
      await worker.stop();
    }
  } finally {
    await native.close();
    await connection.close();
    await temporalServer.stop();
  }
}
