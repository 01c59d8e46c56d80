// Partner protection's state machine: the states of a delivery task queue's partner gate, what moves the gate
// between them, and which state wins when several are in force at once. The gate is one `partner_gate` row per
// task queue (db/migrations/014_partner_gate.ts); every statement on it is in store/partner/partner-gate.ts.
//
// | state       | entered by                                                     | left by                            |
// |-------------|----------------------------------------------------------------|------------------------------------|
// | `paused`    | an operator's pause (pauseGate) or the partner's own           | an operator's resume (resumeGate), |
// |             | (pauseGateForPartner, the partner API's)                       | which ends both; the partner's own |
// |             |                                                                | resume ends only its own pause     |
// | `tripped`   | PARTNER_BREAKER_FAILURES `failing` answers in a row (feedGate) | an `answered` probe (closeBreaker) |
// | `throttled` | a 429 or 503 answer with Retry-After (feedGate)                | the Retry-After time passing       |
// | `active`    | none of the holds above in force                               | any hold coming into force         |
//
// Which state wins: the first of HOLD_PRECEDENCE in force (an operator's pause over the breaker, the breaker
// over a Retry-After), else `active`. A pause hides, and keeps, a trip or a Retry-After beneath it: after the
// resume the gate is in whichever is still in force.
//
// What each state does: while `active`, an attempt's claim takes a send slot at the cap and POSTs. Otherwise the
// claim holds the delivery without spending its attempt (store/webhooks/attempt-claim.ts), and its workflow waits
// (workflows/webhooks/delivery-state.ts) until the partner recovery wakes it, at the cap, oldest first, once the
// gate is active again (application/partner/partner-recovery.ts), or until PARTNER_HOLD_CEILING_MS has passed.
// While `tripped`, the recovery sends one probe per PARTNER_PROBE_INTERVAL_MS (partner-client/partner-probe.ts).

/** Every state of the gate; the order is the one the API and the metrics list them in. */
export const PARTNER_STATES = ['active', 'paused', 'tripped', 'throttled'] as const;
export type PartnerState = (typeof PARTNER_STATES)[number];

/** A state that holds deliveries. */
export type HoldState = Exclude<PartnerState, 'active'>;

/** Which state wins, strongest first: store/partner/partner-gate.ts derives the gate's state in SQL from this order. */
export const HOLD_PRECEDENCE: readonly HoldState[] = ['paused', 'tripped', 'throttled'];

/**
 * What one POST or probe says about the partner, as the breaker counts it. `failing`: it could not be reached or
 * answered that it cannot take deliveries now; counts toward the trip. `answered`: any other answer, including a
 * 4XX refusing one payload, which is that webhook's own failure and never holds the others; resets the count,
 * and closes a tripped breaker when a probe gets it.
 */
export type PartnerAnswer = 'failing' | 'answered';

/** No answer (null), a 5XX or a 429 is `failing`; anything else is `answered`. */
export const partnerAnswer = (httpStatus: number | null): PartnerAnswer =>
  httpStatus === null || httpStatus >= 500 || httpStatus === 429 ? 'failing' : 'answered';

/** What one probe of a tripped breaker found. */
export interface ProbeResult {
  readonly answer: PartnerAnswer;
  readonly httpStatus: number | null;
  readonly errorClass: string | null;
}
