import { condition, defineSignal, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type { BareActivities, BareDeliveryInput } from './activities';

// The bundle's entry point: only workflow code may be exported from here.

const { postEnvelope } = proxyLocalActivities<BareActivities>({ startToCloseTimeout: '30 seconds' });

/** The floor of a delivery on Temporal: one local activity that POSTs the webhook, then complete. */
export async function bareDelivery(input: BareDeliveryInput): Promise<void> {
  await postEnvelope(input);
}

export const bareRelease = defineSignal('bareRelease');

/** The same, held until a signal wakes it: the floor of a held delivery's release (the drain suite). */
export async function bareHeldDelivery(input: BareDeliveryInput): Promise<void> {
  let released = false;
  setHandler(bareRelease, () => void (released = true));
  await condition(() => released);
  await postEnvelope(input);
}
