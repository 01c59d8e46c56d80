import type { Knex } from 'knex';
import type { Config } from '../../lib/config';
import {
  attemptHours,
  attemptWindows,
  backlogOf,
  type AttemptHour,
  type AttemptWindow,
  type Backlog,
} from '../../store/partner/partner-health';
import { readGate } from '../../store/partner/partner-gate';
import { partnerStatus, type PartnerStatus } from './partner-operator';

// The partner's health (GET /partner/v1/health, docs/partners.md "Health"): its app's companies' attempts of the
// last hour and day, their backlog now, and the gate as the operator's status shows it (one per deployment).

export interface HealthWindow extends AttemptWindow {
  /** delivered / attempts, to 4 decimals; null without an attempt. */
  readonly success_rate: number | null;
}

export interface HealthHour extends AttemptHour {
  readonly success_rate: number | null;
}

export interface PartnerHealth {
  readonly last_hour: HealthWindow;
  readonly last_24_hours: HealthWindow;
  /** Each of the last 24 clock hours, oldest first: what the portal's chart draws. */
  readonly hourly: readonly HealthHour[];
  readonly backlog: Backlog;
  readonly gate: {
    readonly state: PartnerStatus['state'];
    /** Whose pause is in force (the operator's first: it outlives a partner's resume); null: none. */
    readonly paused_by: 'operator' | 'partner' | null;
    readonly since: Date | null;
    readonly retry_after_until: Date | null;
    readonly max_per_second: number;
  };
  readonly breaker: PartnerStatus['breaker'];
}

const withRate = <W extends Pick<AttemptWindow, 'attempts' | 'delivered'>>(
  window: W,
): W & { success_rate: number | null } => ({
  ...window,
  success_rate: window.attempts === 0 ? null : Math.round((window.delivered / window.attempts) * 10_000) / 10_000,
});

export async function partnerHealth(knex: Knex, config: Config, companyIds: readonly string[]): Promise<PartnerHealth> {
  const windows = await attemptWindows(knex, companyIds);
  const hours = await attemptHours(knex, companyIds);
  const backlog = await backlogOf(knex, companyIds);
  const status = await partnerStatus(knex, config);
  // Who paused, from the gate's columns: the operator's status names only the operator's reason.
  const pauses = await readGate(knex, config.TEMPORAL_TASK_QUEUE);
  const pausedBy = pauses.pausedAt ? 'operator' : pauses.partnerPause ? 'partner' : null;
  return {
    last_hour: withRate(windows.last_hour),
    last_24_hours: withRate(windows.last_24_hours),
    hourly: hours.map(withRate),
    backlog,
    gate: {
      state: status.state,
      paused_by: pausedBy,
      since: status.since,
      retry_after_until: status.retry_after_until,
      max_per_second: status.rate_in_force,
    },
    breaker: status.breaker,
  };
}
