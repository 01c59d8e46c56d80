// A redelivery's sealed body names its own row (lib/at-rest.ts, format v3), not its `redelivery_of`, a column
// any writer of webhook_events can change. On a real PostgreSQL, as a writer with plain SQL: an original's body
// moved onto its redelivery, or a redelivery pointed at another original with that original's body, no longer
// opens. A body of the v2 format (a redelivery's, sealed for its original) still opens until `keys reseal`
// rewrites it for its own row, after which it opens no other way.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { prepareWebhook } from '../../application/ingestion/start-webhook';
import { keysStatus, resealAll } from '../../application/personal-data/key-rotation';
import { dataAtRest, openText, storedBodyBinding } from '../../lib/at-rest';
import { loadConfig } from '../../lib/config';
import { insertRedelivery, insertWebhook } from '../../store/ingestion/webhook-ingestion';
import { findWebhookById } from '../../store/webhooks/webhook-view';
import candidateNew from '../fixtures/events/candidate-new.json';
import { useTestDatabase } from '../support/database';
import { OPERATOR } from '../support/operator';

const config = loadConfig({ PAYLOAD_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}` });
const keyed = dataAtRest(config);

describe("a redelivery's body is bound to its own row, not to its redelivery_of", function () {
  this.timeout(60_000);
  const db = useTestDatabase();

  /** A finished original, its body sealed by the service's own write. */
  const original = async () => {
    const webhook = prepareWebhook({ ...candidateNew, event_id: `binding-${randomUUID()}` });
    assert.equal(
      await insertWebhook(db.knex, keyed, { ...webhook, event: webhook.input.event, runId: null, isTest: false }),
      true,
    );
    return webhook.webhookId;
  };
  const redeliver = async (originalId: string) =>
    (
      await insertRedelivery(db.knex, keyed, {
        webhookId: randomUUID(),
        workflowId: `binding-${randomUUID()}`,
        originalId,
        key: `single:${randomUUID()}`,
      })
    ).webhookId;
  const sealedOf = (id: string) =>
    db.knex('webhook_events').where({ id }).first('body_sealed', 'body_key_id', 'redelivery_of');
  /** The body as the service reads it, or the error's name. */
  const read = (id: string) =>
    findWebhookById(db.knex, keyed, id).then(
      (webhook) => webhook!.event,
      (error: Error) => error.name,
    );
  /** The exact stored text of a row's body. */
  const text = async (id: string) => {
    const row = await sealedOf(id);
    return openText(
      keyed,
      { clear: null, sealed: row.body_sealed, keyId: row.body_key_id },
      storedBodyBinding(id, row.redelivery_of, row.body_key_id),
    );
  };

  it('seals a redelivery for its own id: the same text, other bytes; a moved body or a changed redelivery_of does not open', async () => {
    const [a, b] = [await original(), await original()];
    const r = await redeliver(a);
    const [rowA, rowR] = [await sealedOf(a), await sealedOf(r)];
    assert.deepEqual([rowR.body_key_id, rowR.redelivery_of], ['v3:k1', a]);
    assert.notDeepEqual(rowR.body_sealed, rowA.body_sealed);
    assert.equal(await text(r), await text(a), 'the very text of the original');
    assert.deepEqual(await read(r), await read(a));

    // A writer moves the original's body onto its redelivery: the body names the original's row, not this one.
    await db.knex('webhook_events').where({ id: r }).update({ body_sealed: rowA.body_sealed });
    assert.equal(await read(r), 'StoredTextDecryptionError');
    // A writer points the redelivery at another original, with that original's body.
    const rowB = await sealedOf(b);
    await db.knex('webhook_events').where({ id: r }).update({ redelivery_of: b, body_sealed: rowB.body_sealed });
    assert.equal(await read(r), 'StoredTextDecryptionError');
    // The redelivery's own body moved onto another redelivery of the same original does not open there either.
    const other = await redeliver(a);
    await db.knex('webhook_events').where({ id: other }).update({ body_sealed: rowR.body_sealed });
    assert.equal(await read(other), 'StoredTextDecryptionError');
    // Its own body put back, the redelivery reads again, whatever redelivery_of says.
    await db.knex('webhook_events').where({ id: r }).update({ body_sealed: rowR.body_sealed });
    assert.deepEqual(await read(r), await read(a));
  });

  it('opens a v2 redelivery body (sealed for its original) until `keys reseal` seals it for its own row', async () => {
    const a = await original();
    const rowA = await sealedOf(a);
    // As the previous code wrote it: the original's bytes, byte for byte, in the v2 form.
    const legacy = await redeliver(a);
    const v2Form = { body_sealed: rowA.body_sealed, body_key_id: 'v2:k1' };
    await db.knex('webhook_events').where({ id: a }).update(v2Form);
    await db.knex('webhook_events').where({ id: legacy }).update(v2Form);
    assert.deepEqual(await read(legacy), await read(a));
    const before = await keysStatus(db.knex, config);
    assert.ok(
      before.stored.some((s) => s.kind === 'body' && s.format === 'v2' && s.count >= 2),
      JSON.stringify(before.stored),
    );
    assert.ok(before.to_reseal.bodies >= 2);

    await resealAll(db.knex, config, OPERATOR, { batchSize: 500 });
    const after = await keysStatus(db.knex, config);
    assert.deepEqual(
      [after.to_reseal, after.stored.map((s) => s.format)],
      [{ bodies: 0, excerpts: 0, lane_keys: 0, signing_secrets: 0 }, ['v3']],
    );
    const resealed = await sealedOf(legacy);
    assert.equal(resealed.body_key_id, 'v3:k1');
    assert.deepEqual(await read(legacy), await read(a));
    // Its new ciphertext names its own row: labelled v2 again (so read through redelivery_of) it does not open.
    await db.knex('webhook_events').where({ id: legacy }).update({ body_key_id: 'v2:k1' });
    assert.equal(await read(legacy), 'StoredTextDecryptionError');
  });
});
