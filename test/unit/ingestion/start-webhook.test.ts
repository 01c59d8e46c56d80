import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { prepareWebhook, startWebhook } from '../../../index';
import candidateNew from '../../fixtures/events/candidate-new.json';
import { WebhookValidationError } from '../../../lib/errors';

describe('startWebhook (exported for upstream Temporal clients)', () => {
  it('rejects an invalid event with the path-level errors before touching Temporal', async () => {
    const untouched = new Proxy({} as Client, {
      get() {
        throw new Error('the client must not be used for an invalid event');
      },
    });
    const bad = {
      event_type: 'candidate',
      action: 'new',
      data: {
        ...candidateNew.data,
        candidate: { ...candidateNew.data.candidate, status: { id: 1, name: 'x', group: 2 } },
      },
    };
    await assert.rejects(startWebhook(untouched, bad as never), (error: unknown) => {
      assert.ok(error instanceof WebhookValidationError);
      assert.deepEqual(error.errors, [
        { path: 'data.candidate.status.group', message: 'must be one of 0, 1, 19, 20, 21' },
      ]);
      assert.equal(
        error.message,
        'Invalid webhook event: data.candidate.status.group: must be one of 0, 1, 19, 20, 21',
      );
      return true;
    });
  });

  it('derives the same ids as the API for the same event_id, and new ones without it', () => {
    const a = prepareWebhook(candidateNew);
    const b = prepareWebhook(structuredClone(candidateNew));
    assert.deepEqual([a.eventId, a.webhookId, a.workflowId], [b.eventId, b.webhookId, b.workflowId]);
    assert.equal(a.workflowId, 'webhook-candidate-new-candidate-new-acme-c-77');
    assert.match(a.webhookId, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const { event_id: _id, ...withoutId } = candidateNew;
    assert.notEqual(prepareWebhook(withoutId).eventId, prepareWebhook(withoutId).eventId);
    assert.equal(a.input.sendTimeoutMs, 30_000);
    assert.deepEqual(Object.keys(a.input.event), ['event_type', 'action', 'data']);
  });
});
