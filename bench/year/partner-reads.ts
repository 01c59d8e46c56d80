import type { Knex } from '../../db/database';
import { appGet, grantApp } from '../harness/partner-apps';
import { explain, type Statement } from '../harness/statements';

/**
 * The spec's typical partner app: a few of the seed's 50 companies (each holds 2 % of the webhooks). company-0
 * holds every webhook of candidate c-0, whose lane `candidate:c-0` has 10 spread over the 90 days at every size.
 */
const COMPANIES = ['company-0', 'company-17', 'company-41'];
let headers: Record<string, string> = {};

export async function grantPartnerApp(knex: Knex): Promise<void> {
  headers = await grantApp(knex, 'bench-year-app', COMPANIES);
}

/** The partner API's reads of the year suite: its list's first page (50, the default), each filter, deep pages; a webhook. */
export function partnerReads(iso: (daysAgo: number) => string): Array<[string, string]> {
  const list = (query: Record<string, string> = {}) => `/partner/v1/webhooks?${new URLSearchParams(query)}`;
  return [
    ['partner list: first page', list()],
    ['partner list: status=failed', list({ status: 'failed' })],
    ['partner list: event_type=company', list({ event_type: 'company' })],
    ['partner list: company_id', list({ company_id: 'company-17' })],
    ['partner list: ordering_key (10 webhooks in 90 days)', list({ ordering_key: 'candidate:c-0' })],
    ['partner list: since & until (15 days)', list({ since: iso(45), until: iso(30) })],
    ['partner list: status=failed & since (7 days)', list({ status: 'failed', since: iso(7) })],
    ['partner list: deep page (next 20 pages in)', 'next:20'],
    ['partner list: previous from the deep page', 'previous:20'],
    ["partner webhook: GET /webhooks/{id} (the deep page's first)", 'detail:20'],
    ['partner feed: first page (no cursor)', '/partner/v1/events'],
    ['partner feed: 20 pages in', 'feed:20'],
    ['partner feed: delivery_success=false, first page', '/partner/v1/events?delivery_success=false'],
    ['partner health: GET /health', '/partner/v1/health'],
    ['partner audit: GET /audit, first page', '/partner/v1/audit'],
  ];
}

/**
 * GET `path` as the app: its time and body. `next:<k>` is the page reached by following `next` links k times
 * from the first page (`previous:<k>`: then its `previous` link; `detail:<k>`: its first webhook; `feed:<k>`: the
 * feed's page k pages in), found once and cached per API.
 */
export async function partnerGet(base: string, path: string): Promise<{ ms: number; text: string }> {
  const target = path.includes(':') && !path.startsWith('/') ? await linkAt(base, path) : path;
  const { status, ms, text } = await appGet(base, target, headers);
  if (status !== 200) throw new Error(`GET ${target} as a partner app answered ${status}: ${text}`);
  return { ms, text };
}

/** The reads the API at `base` serves (a route not there yet answers 404): the others are left out of the run. */
export async function servedReads(base: string, reads: Array<[string, string]>): Promise<Array<[string, string]>> {
  const served: Array<[string, string]> = [];
  for (const read of reads)
    if (read[1].includes(':') || (await appGet(base, read[1], headers)).status !== 404) served.push(read);
  return served;
}

const links = new Map<string, string>();
async function linkAt(base: string, marker: string): Promise<string> {
  const cached = links.get(`${base}#${marker}`);
  if (cached) return cached;
  const [way, depth] = marker.split(':');
  const relative = (url: string) => new URL(url).pathname + new URL(url).search;
  let path = way === 'feed' ? '/partner/v1/events' : '/partner/v1/webhooks';
  for (let k = 0; k < Number(depth); k++) {
    const next = (JSON.parse((await partnerGet(base, path)).text) as { next: string | null }).next;
    if (!next) throw new Error(`the partner list ends ${k} pages in`);
    path = relative(next);
  }
  if (way === 'detail')
    path = `/partner/v1/webhooks/${(JSON.parse((await partnerGet(base, path)).text) as { results: Array<{ id: string }> }).results[0].id}`;
  if (way === 'previous')
    path = relative((JSON.parse((await partnerGet(base, path)).text) as { previous: string }).previous);
  links.set(`${base}#${marker}`, path);
  return path;
}

/** Each read's statements on webhook_events as the API sends them, EXPLAIN ANALYZEd: Markdown, one block each. */
export async function partnerPlans(knex: Knex, base: string, reads: Array<[string, string]>): Promise<string> {
  const blocks: string[] = [];
  for (const [label, path] of reads) {
    await partnerGet(base, path); // the links found before the statements are recorded
    const seen: Statement[] = [];
    const record = (query: Statement) => seen.push({ sql: query.sql, bindings: query.bindings ?? [] });
    knex.on('query', record);
    try {
      await partnerGet(base, path);
    } finally {
      knex.off('query', record);
    }
    for (const statement of seen.filter((s) => s.sql.includes('webhook_events')))
      blocks.push(`${label}:`, '', (await explain(knex, statement)).block, '');
  }
  return blocks.join('\n');
}
