import { call, problem } from './api.js';
import type { Page } from './context.js';
import { facts, h, svg, table, fill } from './dom.js';

// Health: the last hour and day in figures, and the day hour by hour as two charts drawn here in SVG (the success
// rate, and the answer time's median and 95th percentile), each with its table for a reader without the picture.

interface Window {
  attempts: number;
  delivered: number;
  failed: number;
  webhooks_failed: number;
  success_rate: number | null;
  answer_ms_p50: number | null;
  answer_ms_p95: number | null;
}
interface Hour extends Omit<Window, 'webhooks_failed'> {
  hour: string;
}
interface Health {
  last_hour: Window;
  last_24_hours: Window;
  hourly: Hour[];
  backlog: { pending: number; queued: number; held: number; oldest_pending_age_seconds: number | null };
  gate: { state: string; paused_by: string | null; max_per_second: number };
  breaker: { consecutive_failures: number; failures_to_trip: number; trips: number };
}

const percent = (rate: number | null) => (rate === null ? '–' : `${(rate * 100).toFixed(1)} %`);
const ms = (value: number | null) => (value === null ? '–' : `${value} ms`);
const hourLabel = (iso: string) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

const WIDTH = 480;
const HEIGHT = 160;
const PAD = 28;

/** A chart of one or more hourly series on a shared scale, as SVG lines with their points. */
function chart(
  title: string,
  hours: Hour[],
  series: Array<{ name: string; css: string; value: (hour: Hour) => number | null }>,
  max: number,
  unit: (v: number) => string,
): Node {
  const x = (i: number) => PAD + (i * (WIDTH - 2 * PAD)) / Math.max(1, hours.length - 1);
  const y = (v: number) => HEIGHT - PAD - (v / (max || 1)) * (HEIGHT - 2 * PAD);
  const axis = svg(
    'g',
    { class: 'axis' },
    svg('line', { x1: PAD, y1: HEIGHT - PAD, x2: WIDTH - PAD, y2: HEIGHT - PAD }),
    svg('line', { x1: PAD, y1: PAD, x2: PAD, y2: HEIGHT - PAD }),
    label(2, y(max) + 4, unit(max)),
    label(2, HEIGHT - PAD + 4, unit(0)),
    label(PAD, HEIGHT - 6, hours[0] ? hourLabel(hours[0].hour) : ''),
    label(WIDTH - PAD - 30, HEIGHT - 6, hours.at(-1) ? hourLabel(hours.at(-1)!.hour) : ''),
  );
  const lines = series.map((s) => {
    const points = hours.flatMap((hour, i) => {
      const value = s.value(hour);
      return value === null ? [] : [[x(i), y(value)] as const];
    });
    return svg(
      'g',
      { class: s.css },
      svg('polyline', { points: points.map(([px, py]) => `${px},${py}`).join(' '), fill: 'none' }),
      ...points.map(([px, py]) => svg('circle', { cx: px, cy: py, r: 2.5 })),
    );
  });
  const legend = h('p', { class: 'legend' }, ...series.map((s) => h('span', { class: `key ${s.css}` }, s.name)));
  return h(
    'figure',
    {},
    svg(
      'svg',
      { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': `${title}, the last 24 hours` },
      axis,
      ...lines,
    ),
    h('figcaption', {}, title),
    legend,
  );
}

function label(x: number, y: number, text: string): SVGElement {
  const node = svg('text', { x, y });
  node.textContent = text;
  return node;
}

export const healthPage: Page = async (view) => {
  const answer = await call<Health>('GET', '/health');
  if (answer.status !== 200) {
    fill(view, h('h2', {}, 'Health'), h('p', { class: 'error', role: 'alert' }, problem(answer)));
    return;
  }
  const health = answer.body;
  const window = (name: string, w: Window) =>
    facts([
      [`${name}: attempts`, w.attempts],
      ['Delivered', w.delivered],
      ['Failed attempts', w.failed],
      ['Webhooks failed for good', w.webhooks_failed],
      ['Success rate', percent(w.success_rate)],
      ['Answer time p50 / p95', `${ms(w.answer_ms_p50)} / ${ms(w.answer_ms_p95)}`],
    ]);
  const slowest = Math.max(1, ...health.hourly.map((hour) => hour.answer_ms_p95 ?? 0));
  fill(
    view,
    h('h2', {}, 'Health'),
    h(
      'div',
      { class: 'columns' },
      h('section', { 'aria-label': 'Last hour' }, h('h3', {}, 'Last hour'), window('Last hour', health.last_hour)),
      h(
        'section',
        { 'aria-label': 'Last 24 hours' },
        h('h3', {}, 'Last 24 hours'),
        window('Last 24 hours', health.last_24_hours),
      ),
    ),
    h('h3', {}, 'Backlog and gate'),
    facts([
      ['Pending', health.backlog.pending],
      ['Queued behind their key', health.backlog.queued],
      ['Held by the gate', health.backlog.held],
      [
        'Oldest pending',
        health.backlog.oldest_pending_age_seconds === null ? '–' : `${health.backlog.oldest_pending_age_seconds} s`,
      ],
      [
        'Gate',
        `${health.gate.state}${health.gate.paused_by ? `, paused by the ${health.gate.paused_by}` : ''}, ` +
          `${health.gate.max_per_second} per second`,
      ],
      [
        'Breaker',
        `${health.breaker.consecutive_failures} of ${health.breaker.failures_to_trip} failures, ` +
          `tripped ${health.breaker.trips} times`,
      ],
    ]),
    h('h3', {}, 'The last 24 hours'),
    chart(
      'Success rate per hour',
      health.hourly,
      [{ name: 'success rate', css: 'series-rate', value: (hour) => hour.success_rate }],
      1,
      (v) => `${Math.round(v * 100)}%`,
    ),
    chart(
      'Answer time per hour',
      health.hourly,
      [
        { name: 'p50', css: 'series-p50', value: (hour) => hour.answer_ms_p50 },
        { name: 'p95', css: 'series-p95', value: (hour) => hour.answer_ms_p95 },
      ],
      slowest,
      (v) => `${Math.round(v)} ms`,
    ),
    h(
      'details',
      {},
      h('summary', {}, 'The same hours as a table'),
      table(
        'Hour by hour',
        ['Hour', 'Attempts', 'Delivered', 'Failed', 'Success rate', 'p50', 'p95'],
        health.hourly.map((hour) => [
          hourLabel(hour.hour),
          hour.attempts,
          hour.delivered,
          hour.failed,
          percent(hour.success_rate),
          ms(hour.answer_ms_p50),
          ms(hour.answer_ms_p95),
        ]),
      ),
    ),
  );
};
