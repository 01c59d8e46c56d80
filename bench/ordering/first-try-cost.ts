import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Knex } from 'knex';
import { startApiServer } from '../../api/server';
import { webhookIds } from '../../application/ingestion/ids';
import { createKnex } from '../../db/database';
import { loadConfig } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { ensureSearchAttributes } from '../../temporal/register-search-attributes';
import { runTogether } from '../../worker/run-workers';
import { installTemporalRuntime } from '../../worker/temporal-runtime';
import { webhookWorkerOptions } from '../../worker/worker-options';
import { countActions } from '../harness/history';
import type { PartnerServer } from '../harness/partner';
import { WORKFLOW_BUNDLE } from '../harness/service';
import { benchEvent, ingest, serviceEnv, waitUntil } from '../harness/webhook-part';

export type Ordering = 'entity' | 'off';

/** History events and PostgreSQL statements of one first-try delivery on an empty lane, averaged over the samples. */
export interface FirstTryCost {
  readonly ordering: Ordering;
  readonly events: number;
  readonly statements: number;
}

/**
 * The method of test/ordering/entity-ordering.test.ts: the API and both workers in this process, on the bench
 * knex, whose `query` events count the statements that name the measured webhook (the service's processes
 * cannot be listened to, and the bench PostgreSQL has no pg_stat_statements). One sample at a time, after one
 * that warms the caches (data at rest settings, index keys, the gate's row); each its own candidate, so its own key.
 */
export async function measureFirstTryCost(o: {
  databaseUrl: string;
  knex: Knex;
  partner: PartnerServer;
  address: string;
  ordering: Ordering;
  samples: number;
}): Promise<FirstTryCost> {
  // Errors only: the in-process API warns of the shared token and the unset SCIM token at each start.
  const logger = createLogger('error');
  const config = loadConfig({
    ...serviceEnv(o.databaseUrl, o.partner.url),
    TEMPORAL_ADDRESS: o.address,
    TEMPORAL_TASK_QUEUE: `bench-cost-${randomUUID()}`,
    WEBHOOK_ORDERING: o.ordering,
  });
  installTemporalRuntime(createLogger('error'));
  const native = await NativeConnection.connect({ address: o.address });
  const api = await startApiServer({ config, knex: o.knex, logger }, 0, '127.0.0.1');
  // The bench's own looks go through a knex of their own, so they are not counted.
  const looker = createKnex(o.databaseUrl, { min: 0, max: 1 });
  let stop!: () => void;
  let running: Promise<void> | undefined;
  try {
    await ensureSearchAttributes(native, config.temporal.namespace);
    const { delivery, records } = webhookWorkerOptions({ config, knex: o.knex, logger }, native);
    // The build's prebuilt bundle, as `partner-service worker` runs it: this compiled bench has none of its own.
    const { workflowsPath: _, ...prebuilt } = delivery;
    const workers = [
      await Worker.create({ ...prebuilt, workflowBundle: { codePath: WORKFLOW_BUNDLE } }),
      await Worker.create(records),
    ];
    running = runTogether(workers, new Promise<void>((resolve) => (stop = resolve)));
    const client = new Client({ connection: native });
    const prefix = `cost-${o.ordering}-${Date.now().toString(36)}`;
    const samples: Array<{ events: number; statements: number }> = [];
    for (let i = 0; i <= o.samples; i++) {
      const { webhookId, workflowId } = webhookIds(benchEvent(`${prefix}-${i}`, 0));
      let statements = 0;
      const count = (query: { bindings?: unknown[] }) => {
        if ((query.bindings ?? []).includes(webhookId)) statements++;
      };
      o.knex.on('query', count);
      try {
        const { accepted } = await ingest(api.url, `${prefix}-${i}`, 1);
        if (!accepted.has(webhookId)) throw new Error(`the API did not accept ${webhookId}`);
        const handle = client.workflow.getHandle(workflowId);
        await handle.result();
        const recorded = async () =>
          (await looker('webhook_events').where({ id: webhookId }).first('status'))?.status === 'delivered';
        if (!(await waitUntil({ services: [], progress: () => undefined }, 'its outcome recorded', 30_000, recorded)))
          throw new Error(`${webhookId} not recorded delivered`);
        if (i > 0) samples.push({ events: countActions(await handle.fetchHistory()).events, statements });
      } finally {
        o.knex.off('query', count);
      }
    }
    const mean = (of: (s: { events: number; statements: number }) => number) =>
      samples.reduce((sum, s) => sum + of(s), 0) / samples.length;
    return { ordering: o.ordering, events: mean((s) => s.events), statements: mean((s) => s.statements) };
  } finally {
    stop?.();
    await running;
    await api.close();
    await native.close();
    await looker.destroy();
  }
}
