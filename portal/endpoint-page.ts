import { call, problem } from './api.js';
import type { Page } from './context.js';
import { announce, facts, field, h, table, time, fill } from './dom.js';

// The endpoint: pause and resume (who paused, and why), the partner's own rate, and the signing secrets (a new one
// is shown once; an older one can be ended).

interface Endpoint {
  state: string;
  since: string | null;
  pauses: Array<{ paused_by: string; reason: string; since: string }>;
  max_per_second: number | null;
  deployment_max_per_second: number;
  rate_in_force: number;
  breaker: { state: string; consecutive_failures: number; failures_to_trip: number; next_probe_at: string | null };
  held: number;
  signing_secrets: Array<{
    id: string;
    created_at: string | null;
    expires_at: string | null;
    last_used_at: string | null;
    source: string;
  }>;
}

export const endpointPage: Page = async (view, context) => {
  const answer = await call<Endpoint>('GET', '/endpoint');
  if (answer.status !== 200) {
    fill(view, h('h2', {}, 'Endpoint'), h('p', { class: 'error', role: 'alert' }, problem(answer)));
    return;
  }
  const endpoint = answer.body;
  const reload = () => endpointPage(view, context);
  const act = async (method: string, path: string, body: unknown, done: string) => {
    const result = await call(method, path, body);
    if (result.status >= 200 && result.status < 300) {
      await reload();
      announce(done);
    } else announce(problem(result));
  };

  const partnerPaused = endpoint.pauses.some((pause) => pause.paused_by.startsWith('app:'));
  const reason = h('input', { name: 'reason', type: 'text', required: true, maxlength: 500 });
  const pauseControl = partnerPaused
    ? h(
        'button',
        { type: 'button', onclick: () => act('POST', '/endpoint/resume', undefined, 'Deliveries resumed.') },
        'Resume deliveries',
      )
    : h(
        'form',
        {
          'aria-label': 'Pause deliveries',
          onsubmit: (event: Event) => {
            event.preventDefault();
            void act('POST', '/endpoint/pause', { reason: reason.value }, 'Deliveries paused.');
          },
        },
        field('Reason', reason),
        h('button', { type: 'submit' }, 'Pause deliveries'),
      );

  const rate = h('input', {
    name: 'max_per_second',
    type: 'number',
    min: 1,
    max: endpoint.deployment_max_per_second,
    value: endpoint.max_per_second ?? '',
  });
  const rateForm = h(
    'form',
    {
      'aria-label': 'Your rate',
      onsubmit: (event: Event) => {
        event.preventDefault();
        const value = rate.value ? Number(rate.value) : null;
        void act('PATCH', '/endpoint', { max_per_second: value }, 'Rate saved.');
      },
    },
    field(`Your rate, POSTs per second (empty: the deployment's ${endpoint.deployment_max_per_second})`, rate),
    h('button', { type: 'submit' }, 'Save the rate'),
  );

  const newSecret = h('div', { class: 'new-secret', 'aria-live': 'polite' });
  const rotate = h(
    'button',
    {
      type: 'button',
      onclick: async () => {
        const created = await call<{ id: string; secret: string }>('POST', '/signing-secrets');
        if (created.status !== 201) return announce(problem(created));
        await reload();
        announce('New signing secret made: copy it now, it is not shown again.');
        const shown = document.querySelector('.new-secret');
        shown?.replaceChildren(
          h('p', {}, 'Your new signing secret. Copy it now: it is not shown again.'),
          h('output', { class: 'secret', 'aria-label': 'New signing secret' }, created.body.secret),
        );
      },
    },
    'Rotate the signing secret',
  );
  const current = endpoint.signing_secrets.filter((secret) => secret.expires_at === null).at(-1)?.id;
  fill(
    view,
    h('h2', {}, 'Endpoint'),
    facts([
      ['State', h('strong', {}, endpoint.state)],
      ['Since', time(endpoint.since)],
      ['Held deliveries', endpoint.held],
      ['Rate in force', `${endpoint.rate_in_force} per second`],
      [
        'Breaker',
        `${endpoint.breaker.state} (${endpoint.breaker.consecutive_failures} of ` +
          `${endpoint.breaker.failures_to_trip} failures)`,
      ],
    ]),
    h('h3', {}, 'Pauses'),
    endpoint.pauses.length === 0
      ? h('p', {}, 'Not paused.')
      : h(
          'ul',
          {},
          ...endpoint.pauses.map((pause) =>
            h('li', {}, `Paused by ${pause.paused_by}: “${pause.reason}”, since `, time(pause.since)),
          ),
        ),
    pauseControl,
    h('h3', {}, 'Rate'),
    rateForm,
    h('h3', {}, 'Signing secrets'),
    table(
      'Signing secrets',
      ['Id', 'Source', 'Created', 'Ends', 'Last used', ''],
      endpoint.signing_secrets.map((secret) => [
        secret.id,
        secret.source,
        time(secret.created_at),
        time(secret.expires_at),
        time(secret.last_used_at),
        secret.source === 'api' && secret.id !== current
          ? h(
              'button',
              {
                type: 'button',
                onclick: () => act('DELETE', `/signing-secrets/${secret.id}`, undefined, 'Secret ended.'),
              },
              `End ${secret.id.slice(0, 8)}`,
            )
          : '',
      ]),
    ),
    rotate,
    newSecret,
  );
};
