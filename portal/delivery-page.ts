import { call, problem } from './api.js';
import type { Page } from './context.js';
import type { WebhookRow } from './deliveries-page.js';
import { announce, facts, h, table, time, fill } from './dom.js';

// One delivery: why it is where it is (the explanation), each attempt, the exact body sent, and a redelivery.

interface Attempt {
  number: number;
  started_at: string;
  duration_ms: number;
  http_status: number | null;
  error_class: string | null;
  response_excerpt: string | null;
}

interface Webhook extends Omit<WebhookRow, 'attempts'> {
  event_id: string;
  finished_at: string | null;
  redelivery_of: string | null;
  attempts: Attempt[];
  next_attempt_at: string | null;
  explanation: { code: string; text: string };
}

const link = (id: string | null) => (id ? h('a', { href: `#/webhooks/${id}` }, id) : '–');

export const deliveryPage: Page = async (view, { path, can }) => {
  const id = path;
  const answer = await call<Webhook>('GET', `/webhooks/${encodeURIComponent(id)}`);
  if (answer.status !== 200) {
    fill(view, h('h2', {}, 'Delivery'), h('p', { class: 'error', role: 'alert' }, problem(answer)));
    return;
  }
  const webhook = answer.body;
  const body = await call<unknown>('GET', `/webhooks/${encodeURIComponent(id)}/body`);
  const result = h('p', { class: 'result' });
  const redeliver = can('deliveries:write')
    ? h(
        'button',
        {
          type: 'button',
          onclick: async () => {
            const sent = await call<{ webhook_id: string }>('POST', `/webhooks/${encodeURIComponent(id)}/redeliver`);
            if (sent.status === 202) {
              result.replaceChildren('Redelivery started: ', link(sent.body.webhook_id));
              announce('Redelivery started.');
            } else result.replaceChildren(problem(sent));
          },
        },
        'Redeliver',
      )
    : null;
  fill(
    view,
    h('h2', {}, `Delivery ${webhook.event_type}/${webhook.action}`),
    h(
      'section',
      { class: `explanation explanation-${webhook.explanation.code}`, 'aria-labelledby': 'why' },
      h('h3', { id: 'why' }, 'Why it is here: ', h('code', {}, webhook.explanation.code)),
      h('p', {}, webhook.explanation.text),
    ),
    facts([
      ['Webhook', webhook.id],
      ['Event id', webhook.event_id],
      ['Status', webhook.status],
      ['Company', webhook.company_id],
      ['Ordering key', webhook.ordering_key ? `${webhook.ordering_key} #${webhook.sequence}` : null],
      ['Accepted', time(webhook.accepted_at)],
      ['Finished', time(webhook.finished_at)],
      ['Next attempt', time(webhook.next_attempt_at)],
      ['Redelivery of', link(webhook.redelivery_of)],
      ['Test event', webhook.is_test ? 'yes' : 'no'],
    ]),
    redeliver,
    result,
    webhook.attempts.length === 0
      ? h('p', {}, 'No attempt yet.')
      : table(
          'Attempts',
          ['#', 'Started', 'Duration', 'Answer', 'Response'],
          webhook.attempts.map((attempt) => [
            attempt.number,
            time(attempt.started_at),
            `${attempt.duration_ms} ms`,
            attempt.http_status ?? attempt.error_class ?? '–',
            attempt.response_excerpt ?? '',
          ]),
        ),
    h('h3', {}, 'The exact body sent'),
    body.status === 200
      ? h('pre', { class: 'json', tabindex: 0, 'aria-label': 'Body' }, body.text)
      : h('p', { class: 'removed' }, problem(body)),
  );
};
