import type { Knex } from 'knex';
import { countWaitingWebhooks, listWebhooks, type LoggedWebhook } from '../../store/webhooks/delivery-log';
import { encodeLogCursor, parseLogQuery } from './webhook-filter';

/** One page of the delivery log and the cursor of the next, for the API's `next` link and the CLI. */
export interface DeliveryLogPage {
  readonly webhooks: LoggedWebhook[];
  readonly nextCursor: string | null;
}

/** Reads the page a query asks for (filters, limit, cursor as strings); throws InvalidRequestError for bad ones. */
export async function readDeliveryLog(knex: Knex, query: Record<string, unknown>): Promise<DeliveryLogPage> {
  const { filter, limit, after } = parseLogQuery(query);
  const page = await listWebhooks(knex, filter, { limit, after });
  return { webhooks: page.webhooks, nextCursor: page.next ? encodeLogCursor(page.next) : null };
}

/** Deliveries waiting on a retry timer: the log's `waiting` status, for the worker's gauge. */
export const countWaitingDeliveries = (knex: Knex): Promise<number> => countWaitingWebhooks(knex);
