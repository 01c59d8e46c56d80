import { createTemporalGateway } from '../temporal/gateway';
import { runPartnerRecovery } from '../application/partner/partner-recovery';
import { runStartResolution } from '../application/ingestion/start-resolution';
import { runOrderingSweep } from '../application/ordering/ordering-sweep';
import { erasedInFlightBoundMs } from '../lib/delivery';
import { probePartner } from '../partner-client/partner-probe';
import type { WorkerDependencies } from './worker-options';

/**
 * What runs beside the workers while they poll, until `signal` aborts: the partner recovery (probes of a tripped
 * breaker, and the end of holds), the lookups that settle every start whose outcome an api process did not
 * learn, and the ordering sweep (wakes a queued webhook whose wake was lost). Resolves once all have stopped
 * and their Temporal connection is closed.
 */
export async function runBackgroundLoops(
  { config, knex, logger }: WorkerDependencies,
  signal: AbortSignal,
): Promise<void> {
  const gateway = createTemporalGateway(config, logger);
  const recovery = runPartnerRecovery(
    {
      config,
      knex,
      logger: logger.child({ component: 'partner-recovery' }),
      gateway,
      probe: () => probePartner(config),
    },
    signal,
  );
  const resolution = runStartResolution(
    {
      knex,
      logger: logger.child({ component: 'start-resolution' }),
      doubtSeconds: config.WEBHOOK_START_DOUBT_SECONDS,
      gateway,
    },
    signal,
  );
  const erasedInFlightAfterMs = erasedInFlightBoundMs(config.PARTNER_TIMEOUT_MS);
  const ordering = runOrderingSweep(
    { knex, logger: logger.child({ component: 'ordering-sweep' }), gateway, erasedInFlightAfterMs },
    signal,
  );
  await Promise.all([recovery, resolution, ordering]);
  await gateway.close();
}
