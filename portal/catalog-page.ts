import { call, problem } from './api.js';
import type { Page } from './context.js';
import { announce, h, jsonBlock, fill } from './dom.js';

// The event catalog: each pair with its example, and (with deliveries:write) a test event of it sent to the endpoint.

interface EventType {
  event_type: string;
  action: string;
  example: unknown;
}

export const catalogPage: Page = async (view, { can }) => {
  const answer = await call<{ event_types: EventType[] }>('GET', '/event-types');
  if (answer.status !== 200) {
    fill(view, h('h2', {}, 'Event catalog'), h('p', { class: 'error', role: 'alert' }, problem(answer)));
    return;
  }
  fill(
    view,
    h('h2', {}, 'Event catalog'),
    ...answer.body.event_types.map((type) => {
      const pair = `${type.event_type}/${type.action}`;
      const result = h('p', { class: 'result' });
      const send = can('deliveries:write')
        ? h(
            'button',
            {
              type: 'button',
              onclick: async () => {
                const sent = await call<{ webhook_id: string }>('POST', '/test-events', {
                  event_type: type.event_type,
                  action: type.action,
                });
                if (sent.status !== 202) return result.replaceChildren(problem(sent));
                result.replaceChildren(
                  'Test event accepted: ',
                  h('a', { href: `#/webhooks/${sent.body.webhook_id}` }, sent.body.webhook_id),
                );
                announce(`Test event ${pair} accepted.`);
              },
            },
            `Send a test ${pair}`,
          )
        : null;
      return h('section', { 'aria-label': pair }, h('h3', {}, pair), jsonBlock(type.example), send, result);
    }),
  );
};
