import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { positionalSql, type SqlFragment, type SqlValue } from '../../../db/sql';
import { toEnvelope, type WebhookEventInput } from '../../../events/envelope';
import { DEVELOPMENT_INDEX_KEY } from '../../../lib/at-rest';
import type { AttemptRecord, WebhookRef } from '../../../lib/delivery';
import { claimStatement } from '../../../store/webhooks/attempt-claim';
import { recordStatement } from '../../../store/webhooks/attempt-record';
import candidateNew from '../../fixtures/events/candidate-new.json';
import { IN_CLEAR } from '../../support/at-rest';

// The statements an attempt's claim and record send are assembled from two files (store/webhooks/ and the
// partner gate's parts in store/partner/partner-gate.ts). docs/sql/ holds each whole, as PostgreSQL receives it,
// for review to read (Markdown: a generated print, not code); this test fails when a committed file differs
// from what the code assembles. Needs no server. After a change to a statement:
// WRITE_SQL=1 npx mocha --config test/unit/.mocharc.json test/unit/webhooks/attempt-statements.test.ts

const root = path.resolve(__dirname, '../../..');

const webhook: WebhookRef = {
  webhookId: '8f1d2c3b-4a5e-5f60-8172-93a4b5c6d7e8',
  eventId: 'candidate-new-acme-c-77',
  workflowId: 'webhook-candidate-new-candidate-new-acme-c-77',
  runId: '0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
  isTest: false,
};

const attempt: AttemptRecord = {
  attempt: 1,
  scheduledAt: '2026-01-02T03:04:05.000Z',
  startedAt: '2026-01-02T03:04:05.010Z',
  durationMs: 42,
  httpStatus: 200,
  errorClass: null,
  errorMessage: null,
  responseBody: 'ok',
  succeeded: true,
};

const gate = { taskQueue: 'partner-deliveries', maxPerSecond: 50, bypassHold: false, slotReserved: false };
const feedback = {
  taskQueue: 'partner-deliveries',
  answer: 'answered',
  retryAfterSeconds: null,
  breakerFailures: 5,
  probeIntervalMs: 30_000,
} as const;

/** A bound value as the example binds it, shortened to one line. */
function shown(value: SqlValue): string {
  if (value === null) return 'NULL';
  if (Buffer.isBuffer(value)) return `<${value.length} bytes>`;
  const text = typeof value === 'string' ? `'${value.replace(/\n/g, ' ')}'` : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

/** One statement as review reads it: what it is, its prepared name, its example's bound values, its text with $n. */
function printed(title: string, statement: SqlFragment): string {
  const values = statement.bindings.map((value, i) => `- \`$${i + 1}\` = \`${shown(value)}\``);
  const text = positionalSql(statement.sql)
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
  return [
    `## ${title}`,
    '',
    `Prepared as \`${statement.name}\`. Bound values of the test's example:`,
    '',
    ...values,
    '',
    '```sql',
    `${text};`,
    '```',
    '',
  ].join('\n');
}

function file(title: string, source: string, statements: string[]): string {
  return [
    `# ${title}`,
    '',
    'Written by `test/unit/webhooks/attempt-statements.test.ts`; do not edit.',
    `Assembled by ${source}, as PostgreSQL receives it.`,
    'After a change to the statement: `WRITE_SQL=1 npx mocha --config test/unit/.mocharc.json test/unit/webhooks/attempt-statements.test.ts`.',
    '',
    ...statements,
  ].join('\n');
}

const FILES: Record<string, () => string> = {
  'docs/sql/attempt-claim.md': () =>
    file(
      "The attempt's claim",
      '`store/webhooks/attempt-claim.ts` (`claimStatement`, with `claimGateCtes` and `CLAIM_GATE_COLUMNS` of `store/partner/partner-gate.ts`)',
      [
        printed(
          'The claim',
          claimStatement(
            IN_CLEAR,
            DEVELOPMENT_INDEX_KEY,
            { ...webhook, event: toEnvelope(candidateNew as WebhookEventInput) },
            1,
            gate,
          ),
        ),
      ],
    ),
  'docs/sql/attempt-record.md': () =>
    file(
      "The attempt's record",
      '`store/webhooks/attempt-record.ts` (`recordStatement`, with `feedGate` of `store/partner/partner-gate.ts`)',
      [
        printed(
          'By the record activity (no final status, no feedback to the gate)',
          recordStatement(IN_CLEAR, { webhook, attempt }),
        ),
        printed(
          "By the attempt that ends the delivery, with its POST's feedback to the gate",
          recordStatement(
            IN_CLEAR,
            { webhook, attempt },
            { status: 'delivered', finishedAt: '2026-01-02T03:04:05.060Z' },
            feedback,
          ),
        ),
      ],
    ),
};

describe('the attempt statements printed in docs/sql/', () => {
  for (const [name, assembled] of Object.entries(FILES)) {
    it(`${name} is the statement the code assembles`, () => {
      const target = path.join(root, name);
      if (process.env.WRITE_SQL === '1') {
        mkdirSync(path.dirname(target), { recursive: true });
        writeFileSync(target, assembled());
      }
      assert.equal(
        readFileSync(target, 'utf8'),
        assembled(),
        `${name} differs from the code: WRITE_SQL=1 npx mocha --config test/unit/.mocharc.json test/unit/webhooks/attempt-statements.test.ts`,
      );
    });
  }
});
