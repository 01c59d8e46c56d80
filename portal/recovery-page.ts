import { call, problem } from './api.js';
import type { Page } from './context.js';
import { announce, facts, field, h, fill } from './dom.js';

// Recovery: redeliver what failed in a window. The preview (a dry run) says what would start; the real one then
// shows its progress until it ends, and can be cancelled.

interface Recovery {
  recovery_id: string;
  state: string;
  total: number;
  started: number;
  cancelled: number;
  delivered?: number;
  failed?: number;
  pending?: number;
}

const DAY_MS = 86_400_000;
const localNow = (offsetMs = 0) => {
  const date = new Date(Date.now() - offsetMs);
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

let watching: number | undefined;

export const recoveryPage: Page = async (view) => {
  window.clearInterval(watching);
  const since = h('input', { name: 'since', type: 'datetime-local', required: true, value: localNow(DAY_MS) });
  const until = h('input', { name: 'until', type: 'datetime-local', value: '' });
  const status = h(
    'select',
    { name: 'status' },
    h('option', { value: 'failed' }, 'failed'),
    h('option', { value: 'cancelled' }, 'cancelled'),
    h('option', { value: 'delivered' }, 'delivered'),
  );
  const eventType = h('input', { name: 'event_type', type: 'text' });
  const preview = h('output', { class: 'preview', 'aria-live': 'polite' });
  const progress = h('section', { class: 'progress', 'aria-live': 'polite', 'aria-label': 'Recovery progress' });
  const request = (dryRun: boolean) => ({
    since: new Date(since.value).toISOString(),
    ...(until.value && { until: new Date(until.value).toISOString() }),
    status: status.value,
    ...(eventType.value && { event_type: eventType.value }),
    dry_run: dryRun,
  });
  const start = h('button', { type: 'button', disabled: true }, 'Start recovery');

  const show = (recovery: Recovery) => {
    const cancel =
      recovery.state === 'running'
        ? h(
            'button',
            {
              type: 'button',
              onclick: async () => {
                const answer = await call<Recovery>('DELETE', `/recoveries/${recovery.recovery_id}`);
                announce(answer.status === 200 ? 'Cancelling what has not started.' : problem(answer));
              },
            },
            'Cancel the rest',
          )
        : null;
    fill(
      progress,
      h('h3', {}, `Recovery ${recovery.state}`),
      facts([
        ['Recovery', recovery.recovery_id],
        ['To redeliver', recovery.total],
        ['Started', recovery.started],
        ['Cancelled before start', recovery.cancelled],
        ['Delivered', recovery.delivered ?? 0],
        ['Failed', recovery.failed ?? 0],
        ['Pending', recovery.pending ?? 0],
      ]),
      cancel,
    );
  };
  const watch = (id: string) => {
    const poll = async () => {
      const answer = await call<Recovery>('GET', `/recoveries/${id}`);
      if (answer.status !== 200) return;
      show(answer.body);
      if (answer.body.state !== 'running' && answer.body.state !== 'cancelling') window.clearInterval(watching);
    };
    window.clearInterval(watching);
    watching = window.setInterval(() => void poll(), 1000);
    void poll();
  };

  const startRecovery = async () => {
    const answer = await call<Recovery & { running_recovery_id?: string }>('POST', '/recoveries', request(false));
    if (answer.status === 202) {
      announce('Recovery started.');
      watch(answer.body.recovery_id);
    } else {
      preview.replaceChildren(problem(answer));
      if (answer.body.running_recovery_id) watch(answer.body.running_recovery_id);
    }
  };
  start.addEventListener('click', () => void startRecovery());
  const form = h(
    'form',
    {
      'aria-label': 'Recovery window',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        const answer = await call<{ would_start: number; would_skip: number }>('POST', '/recoveries', request(true));
        if (answer.status !== 200) {
          preview.replaceChildren(problem(answer));
          start.disabled = true;
          return;
        }
        preview.replaceChildren(
          `Would redeliver ${answer.body.would_start} webhooks and skip ${answer.body.would_skip}.`,
        );
        start.disabled = answer.body.would_start === 0;
      },
    },
    field('Accepted since', since),
    field('Accepted until (empty: now)', until),
    field('Status', status),
    field('Event type (empty: any)', eventType),
    h('button', { type: 'submit' }, 'Preview'),
  );
  fill(
    view,
    h('h2', {}, 'Recover deliveries'),
    h(
      'p',
      {},
      'Every webhook of your companies accepted in the window that ended with this status is sent again, ' +
        "under the deployment's cap and, per ordering key, in order.",
    ),
    form,
    preview,
    start,
    progress,
  );
};
