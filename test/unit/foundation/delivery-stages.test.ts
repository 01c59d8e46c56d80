// The delivery activity stays short enough to read as its stages (turn → claim → send → record → settle): the
// work of each stage lives in its own function or module, not in deliverAttempt's body.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const DELIVERY = path.join(__dirname, '..', '..', '..', 'activities', 'webhooks', 'delivery.ts');
const MAX_LINES = 30;

/** The lines of the method that starts with `header`, up to the brace that closes it. */
function methodLines(source: string, header: string): string[] {
  const lines = source.split('\n');
  const first = lines.findIndex((line) => line.trimStart().startsWith(header));
  assert.ok(first >= 0, `${header} not found`);
  let depth = 0;
  for (let i = first; i < lines.length; i++) {
    depth += (lines[i].match(/{/g) ?? []).length - (lines[i].match(/}/g) ?? []).length;
    if (depth === 0 && i > first) return lines.slice(first, i + 1);
  }
  throw new Error(`${header} never closes`);
}

describe('the delivery activity', () => {
  it(`deliverAttempt is at most ${MAX_LINES} lines and names its stages in order`, () => {
    const body = methodLines(readFileSync(DELIVERY, 'utf8'), 'async deliverAttempt(');
    assert.ok(body.length <= MAX_LINES, `deliverAttempt has ${body.length} lines`);
    const text = body.join('\n');
    // The four that run one after another, in order; settle takes what record returns.
    const order = ['ordering.turn(', 'gate.claimWithinCap(', 'await send(', 'await record('].map((call) =>
      text.indexOf(call),
    );
    assert.ok(
      order.every((at) => at >= 0),
      `every stage is called: ${order.join(', ')}`,
    );
    assert.deepEqual(
      [...order].sort((a, b) => a - b),
      order,
      'the stages in order: turn, claim, send, record',
    );
    assert.match(text, /return settle\(input, turn\.place, await record\(/);
  });

  it('the method reader measures a method to its closing brace', () => {
    const source = [
      'const x = {',
      '  async deliverAttempt(a) {',
      '    if (a) {',
      '      return 1;',
      '    }',
      '  },',
      '};',
    ].join('\n');
    assert.deepEqual(methodLines(source, 'async deliverAttempt('), [
      '  async deliverAttempt(a) {',
      '    if (a) {',
      '      return 1;',
      '    }',
      '  },',
    ]);
  });
});
