import { call, cursorOf, problem } from './api.js';
import { pageHash, go, type Page } from './context.js';
import { field, h, table, time, fill } from './dom.js';

// Deliveries: the app's webhooks, newest first, with the partner API's filters and its keyset pages.

const STATUSES = ['', 'pending', 'held', 'waiting', 'delivered', 'failed', 'cancelled', 'terminated'];
const FILTERS = ['status', 'event_type', 'action', 'company_id', 'ordering_key', 'since', 'until'] as const;

/** A webhook as the list shows it; GET /webhooks/{id} adds to it. */
export interface WebhookRow {
  id: string;
  event_type: string;
  action: string;
  company_id: string | null;
  status: string;
  ordering_key: string | null;
  sequence: number | null;
  attempts: number;
  accepted_at: string;
  is_test: boolean;
}

/** A datetime-local value as an ISO instant, and back. */
const toIso = (local: string) => (local ? new Date(local).toISOString() : '');
const toLocal = (iso: string | null) => {
  if (!iso) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime())
    ? ''
    : new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

export const deliveriesPage: Page = async (view, { params }) => {
  const status = h('select', { name: 'status' }, ...STATUSES.map((s) => h('option', { value: s }, s || 'any')));
  status.value = params.get('status') ?? '';
  const text = (name: string) => h('input', { name, type: 'text', value: params.get(name) ?? '' });
  const when = (name: string) => h('input', { name, type: 'datetime-local', value: toLocal(params.get(name)) });
  const inputs = {
    event_type: text('event_type'),
    action: text('action'),
    company_id: text('company_id'),
    ordering_key: text('ordering_key'),
    since: when('since'),
    until: when('until'),
  };
  const form = h(
    'form',
    {
      class: 'filters',
      role: 'search',
      'aria-label': 'Filter deliveries',
      onsubmit: (event: Event) => {
        event.preventDefault();
        go(
          pageHash('deliveries', {
            status: status.value,
            event_type: inputs.event_type.value,
            action: inputs.action.value,
            company_id: inputs.company_id.value,
            ordering_key: inputs.ordering_key.value,
            since: toIso(inputs.since.value),
            until: toIso(inputs.until.value),
          }),
        );
      },
    },
    field('Status', status),
    field('Event type', inputs.event_type),
    field('Action', inputs.action),
    field('Company', inputs.company_id),
    field('Ordering key', inputs.ordering_key),
    field('Accepted since', inputs.since),
    field('Accepted until', inputs.until),
    h('button', { type: 'submit' }, 'Filter'),
  );
  const query = new URLSearchParams();
  for (const name of [...FILTERS, 'cursor']) {
    const value = params.get(name);
    if (value) query.set(name, value);
  }
  const answer = await call<{ next: string | null; previous: string | null; results: WebhookRow[] }>(
    'GET',
    `/webhooks?${query}`,
  );
  const filters = Object.fromEntries(FILTERS.map((name) => [name, params.get(name) ?? undefined]));
  const pager = (label: string, link: string | null) => {
    const cursor = cursorOf(link);
    return cursor ? h('a', { href: pageHash('deliveries', { ...filters, cursor }) }, label) : null;
  };
  fill(
    view,
    h('h2', {}, 'Deliveries'),
    form,
    answer.status !== 200
      ? h('p', { class: 'error', role: 'alert' }, problem(answer))
      : answer.body.results.length === 0
        ? h('p', {}, 'No webhook matches these filters.')
        : table(
            'Webhooks, newest first',
            ['Accepted', 'Event', 'Status', 'Attempts', 'Ordering key', 'Webhook'],
            answer.body.results.map((row) => [
              time(row.accepted_at),
              `${row.event_type}/${row.action}${row.is_test ? ' (test)' : ''}`,
              h('span', { class: `status status-${row.status}` }, row.status),
              row.attempts,
              row.ordering_key ? `${row.ordering_key} #${row.sequence}` : '–',
              h('a', { href: `#/webhooks/${row.id}` }, row.id),
            ]),
          ),
    answer.status === 200
      ? h(
          'nav',
          { class: 'pager', 'aria-label': 'Pages' },
          pager('Newer', answer.body.previous),
          pager('Older', answer.body.next),
        )
      : null,
  );
};
