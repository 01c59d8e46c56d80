import type { Knex } from 'knex';
import { z } from 'zod';
import type { DataAtRest } from '../../lib/at-rest';
import { isCanonicalUuid } from '../../lib/validation';
import { decodeKeysetCursor, encodeKeysetCursor, exactText, NOT_A_CURSOR, wholeCount } from '../../lib/keyset-paging';
import { FILTER_DETAIL, InvalidRequestError } from '../../lib/errors';
import type { LogPosition } from '../../store/webhooks/delivery-log';
import { listPartnerDeliveries, type PartnerDeliveryRow } from '../../store/webhooks/partner-deliveries';
import {
  filterFields,
  logStatusField,
  parseFilterFields,
  toFilter,
  untilAfterSince,
  untilAfterSinceIssue,
} from './webhook-filter';

// The partner's delivery list (GET /partner/v1/webhooks): the delivery log's filters and keyset, over the app's
// granted companies, with `next` and `previous` cursors.

export const DEFAULT_PARTNER_PAGE = 50;
export const MAX_PARTNER_PAGE = 100;

/** The list's query string; the OpenAPI document's parameters are generated from it. */
export const partnerListQuery = z
  .strictObject({
    ...filterFields,
    company_id: filterFields.company_id.meta({
      description: "One of the app's companies; any other gives an empty page (never an error).",
    }),
    status: logStatusField,
    ordering_key: exactText.optional().meta({ description: 'Only the webhooks of this ordering key (entity).' }),
    limit: wholeCount(MAX_PARTNER_PAGE).default(DEFAULT_PARTNER_PAGE),
    cursor: z
      .string()
      .optional()
      .meta({ description: 'From a `next` or `previous` link; opaque. Empty or absent: the newest page.' }),
  })
  .refine(untilAfterSince, untilAfterSinceIssue);

/** A page of the partner's list and the cursors of its neighbours (null: none that way). */
export interface PartnerDeliveryListPage {
  readonly webhooks: PartnerDeliveryRow[];
  readonly nextCursor: string | null;
  readonly previousCursor: string | null;
}

type Direction = 'older' | 'newer';
const cursorShape = z.tuple([
  z.enum(['older', 'newer']),
  z.string().regex(/^\d{1,20}$/),
  z.string().refine(isCanonicalUuid),
]);

const encodeCursor = (direction: Direction, position: LogPosition | undefined): string | null =>
  position ? encodeKeysetCursor([direction, position.createdAtUs, position.id]) : null;

function decodeCursor(cursor: string): { direction: Direction; position: LogPosition } {
  const decoded = decodeKeysetCursor(cursor, cursorShape);
  if (!decoded) throw new InvalidRequestError([NOT_A_CURSOR], FILTER_DETAIL);
  return { direction: decoded[0], position: { createdAtUs: decoded[1], id: decoded[2] } };
}

/** Reads the page a query asks for, of `companyIds` only; throws InvalidRequestError for a bad query. */
export async function readPartnerDeliveries(
  knex: Knex,
  atRest: DataAtRest,
  companyIds: readonly string[],
  query: Record<string, unknown>,
): Promise<PartnerDeliveryListPage> {
  const fields = parseFilterFields(partnerListQuery, query);
  const start = fields.cursor ? decodeCursor(fields.cursor) : undefined;
  const page = await listPartnerDeliveries(
    knex,
    atRest,
    companyIds,
    { ...toFilter(fields), orderingKey: fields.ordering_key },
    {
      limit: fields.limit,
      after: start?.direction === 'older' ? start.position : undefined,
      before: start?.direction === 'newer' ? start.position : undefined,
    },
  );
  return {
    webhooks: page.webhooks,
    nextCursor: encodeCursor('older', page.next),
    previousCursor: encodeCursor('newer', page.previous),
  };
}
