// A next version of deliverWebhook that changes the commands of a run: a 1 s timer before the first attempt.
// The replay test bundles it in place of workflows/ to prove that such a change fails the captured histories.
import { sleep } from '@temporalio/workflow';
import { deliverWebhook as current } from '../../workflows/webhooks/deliver-webhook';
import type { DeliverWebhookInput, DeliverySummary } from '../../workflows/types';

export async function deliverWebhook(input: DeliverWebhookInput): Promise<DeliverySummary> {
  await sleep(1000);
  return current(input);
}
