import assert from 'node:assert/strict';
import { createKnex } from '../../db/database';
import { findFreePort } from '../../lib/ports';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { startApiServer, type ApiServer } from '../../api/server';
import { createTestDatabase, type TestDatabase } from '../support/database';

describe('health endpoints', () => {
  const logger = createLogger('silent');
  const config = loadConfig({});
  let db: TestDatabase;
  let api: ApiServer;
  before(async () => {
    db = await createTestDatabase();
    api = await startApiServer({ config, knex: db.knex, logger }, 0);
  });
  after(async () => {
    await api.close();
    await db.drop();
  });

  it('GET /healthz answers 200 while the process is up', async () => {
    const res = await fetch(`${api.url}/healthz`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(await res.json(), { status: 'ok' });
  });

  it('GET /readyz answers 200 when PostgreSQL answers', async () => {
    const res = await fetch(`${api.url}/readyz`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'ready', checks: { database: 'ok' } });
  });

  it('GET /readyz answers 503 with a JSON reason when PostgreSQL does not', async () => {
    const deadKnex = createKnex(`postgres://postgres:postgres@127.0.0.1:${await findFreePort()}/none`, {
      min: 0,
      max: 1,
      acquireTimeoutMillis: 2000,
    });
    const down = await startApiServer({ config, knex: deadKnex, logger }, 0);
    try {
      const res = await fetch(`${down.url}/readyz`);
      assert.equal(res.status, 503);
      assert.deepEqual(await res.json(), {
        status: 'unavailable',
        checks: { database: 'unreachable' },
        reason: 'PostgreSQL did not answer',
      });
      const health = await fetch(`${down.url}/healthz`);
      assert.equal(health.status, 200);
    } finally {
      await down.close();
      await deadKnex.destroy();
    }
  });

  it('a method a route does not serve answers 405 in the same shape, with Allow', async () => {
    const res = await fetch(`${api.url}/healthz`, { method: 'POST' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'HEAD, GET');
    assert.deepEqual(await res.json(), { detail: 'Method "POST" not allowed.' });
  });

  it('GET /metrics serves Prometheus metrics, requests labelled by route pattern', async () => {
    await fetch(`${api.url}/healthz`);
    await fetch(`${api.url}/no/such/path`);
    const res = await fetch(`${api.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    assert.match(
      text,
      /^partner_service_http_request_duration_seconds_count\{method="GET",route="\/healthz",status="200"\} [1-9]/m,
    );
    assert.match(
      text,
      /^partner_service_http_request_duration_seconds_count\{method="GET",route="unmatched",status="404"\} [1-9]/m,
    );
    assert.match(text, /^partner_service_process_resident_memory_bytes \d+/m);
  });

  it('an unknown path answers 404 {"detail": "Not found."}', async () => {
    const res = await fetch(`${api.url}/no/such/path`);
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { detail: 'Not found.' });
  });
});
