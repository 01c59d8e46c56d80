/** What the inbox made of one request's `Authorization` header. */
export type AuthorizationCheck = 'valid' | 'invalid' | 'missing';

/** What the inbox made of one request's `webhook-signature` header. */
export type SignatureCheck = 'valid' | 'invalid' | 'not signed';

/** One request the partner inbox received, as its page and `/deliveries` show it (snake_case like the API). */
export interface InboxDelivery {
  readonly received_at: string;
  readonly webhook_id: string | null;
  readonly webhook_timestamp: string | null;
  /** From the body, when it is a webhook envelope. */
  readonly event_type: string | null;
  readonly action: string | null;
  /** Every request header, the Authorization value masked. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body exactly as received (the signature covers these bytes). */
  readonly body: string;
  readonly checks: { readonly authorization: AuthorizationCheck; readonly signature: SignatureCheck };
}

/** How many deliveries the inbox keeps: enough to follow a demo, bounded so a flood cannot grow memory. */
export const INBOX_CAPACITY = 100;

/** The last `capacity` deliveries in a fixed ring: the oldest is overwritten once the ring is full. */
export class DeliveryRing {
  private readonly slots: InboxDelivery[] = [];
  private next = 0;

  constructor(readonly capacity = INBOX_CAPACITY) {}

  add(delivery: InboxDelivery): void {
    this.slots[this.next] = delivery;
    this.next = (this.next + 1) % this.capacity;
  }

  /** Newest first. */
  list(): InboxDelivery[] {
    const oldestFirst = [...this.slots.slice(this.next), ...this.slots.slice(0, this.next)];
    return oldestFirst.reverse();
  }
}
