import { call, cursorOf, problem } from './api.js';
import { pageHash, type Page } from './context.js';
import { h, table, time, fill } from './dom.js';

// The audit trail's rows that touched the partner's deliveries or endpoint, newest first.

interface AuditRow {
  seq: string | number;
  at: string;
  actor: string;
  action: string;
  target: string | null;
  outcome: string | null;
}

export const auditPage: Page = async (view, { params }) => {
  const cursor = params.get('cursor');
  const answer = await call<{ next: string | null; results: AuditRow[] }>(
    'GET',
    `/audit${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`,
  );
  if (answer.status !== 200) {
    fill(view, h('h2', {}, 'Audit'), h('p', { class: 'error', role: 'alert' }, problem(answer)));
    return;
  }
  const next = cursorOf(answer.body.next);
  fill(
    view,
    h('h2', {}, 'Audit'),
    answer.body.results.length === 0
      ? h('p', {}, 'Nothing recorded yet.')
      : table(
          'Audit trail, newest first',
          ['Seq', 'At', 'By', 'Action', 'Target', 'Outcome'],
          answer.body.results.map((row) => [
            row.seq,
            time(row.at),
            row.actor,
            row.action,
            row.target ?? '–',
            row.outcome ?? '–',
          ]),
        ),
    next
      ? h(
          'nav',
          { class: 'pager', 'aria-label': 'Pages' },
          h('a', { href: pageHash('audit', { cursor: next }) }, 'Older'),
        )
      : null,
  );
};
