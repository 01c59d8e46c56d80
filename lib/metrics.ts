import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/** The process's one Prometheus registry; `GET /metrics` serves it. */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry, prefix: 'partner_service_' });

/** `route` is the matched route pattern (e.g. /v1/companies/:company_pk/users), never a raw path, to bound cardinality. */
export const httpRequestDuration = new Histogram({
  name: 'partner_service_http_request_duration_seconds',
  help: 'HTTP request duration by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [metricsRegistry],
});

/** One per POST to the partner; `outcome` is `2xx`, `3xx` … `6xx`, or the error class (`timeout`, `reset`, …). */
export const webhookAttempts = new Counter({
  name: 'partner_service_webhook_attempts_total',
  help: 'Webhook delivery attempts by event type, action and outcome',
  labelNames: ['event_type', 'action', 'outcome'] as const,
  registers: [metricsRegistry],
});
