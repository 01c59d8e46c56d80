// Errors in log lines carry no personal data: real PostgreSQL errors (a refused value, a duplicate key, a
// failing row), raised through the service's own statement runner and through knex, logged by the service's
// logger configuration and described by describeError, never quote the values they refused.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describeError } from '../../lib/describe-error';
import { loggerOptions } from '../../lib/logger';
import { runSql, sql } from '../../db/sql';
import { failureOf } from '../../cli/errors';
import { useTestDatabase } from '../support/database';

const EMAIL = 'zelphine.quarrington@logdrill.example.org';

/** The JSON lines the service's logger configuration writes for `log`, at trace. */
function logged(log: (logger: pino.Logger) => void): Array<Record<string, unknown>> {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  log(pino(loggerOptions('trace'), stream));
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function caught(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  assert.fail('expected PostgreSQL to refuse the statement');
}

describe('errors in log lines carry no personal data', () => {
  const db = useTestDatabase();

  it("a data exception's refused value is left out of the message and stack; the SQLSTATE stays", async () => {
    const error = await caught(() => runSql(db.knex, sql`SELECT ${EMAIL}::uuid`));
    assert.match(String((error as Error).message), new RegExp(EMAIL.replace(/\./g, '\\.')));
    assert.equal(describeError(error), 'invalid input syntax for type uuid: "[value]"');
    const [line] = logged((logger) => logger.warn({ err: error }, 'query failed'));
    const err = line.err as Record<string, unknown>;
    assert.equal(err.message, 'invalid input syntax for type uuid: "[value]"');
    assert.equal(err.code, '22P02');
    assert.equal(err.type, 'DatabaseError');
    assert.match(String(err.stack), /^error: invalid input syntax for type uuid: "\[value\]"\n/);
    assert.ok(!JSON.stringify(line).includes('zelphine'), JSON.stringify(line));
    // The CLI's line for an unexpected error, with its stack under --verbose.
    const { message } = failureOf(error, { usage: '' }, { verbose: true });
    assert.match(
      message,
      /^partner-service: invalid input syntax for type uuid: "\[value\]"\nerror: invalid input syntax for type uuid: "\[value\]"\n/,
    );
    assert.ok(!message.includes('zelphine'), message);
  });

  it("knex's error names the statement with its placeholders, never the bound values", async () => {
    const error = await caught(() => db.knex.raw('SELECT ?::uuid', [EMAIL]));
    assert.equal(describeError(error), 'SELECT $1::uuid - invalid input syntax for type uuid: "[value]"');
    const [line] = logged((logger) => logger.error({ err: error }, 'query failed'));
    assert.equal(
      (line.err as Record<string, unknown>).message,
      'SELECT $1::uuid - invalid input syntax for type uuid: "[value]"',
    );
    assert.ok(!JSON.stringify(line).includes('zelphine'), JSON.stringify(line));
  });

  it("an integrity violation's row (detail) is left out; the constraint's name stays", async () => {
    const error = await caught(() =>
      db.knex.transaction(async (trx) => {
        await trx.raw(
          "CREATE TEMPORARY TABLE people (email text CONSTRAINT people_email_key UNIQUE, phone text CHECK (phone <> ''))",
        );
        await trx.raw('INSERT INTO people VALUES (?, ?)', [EMAIL, '+44 7700 900123']);
        await trx.raw('INSERT INTO people VALUES (?, ?)', [EMAIL, '+44 7700 900123']);
      }),
    );
    assert.match(String((error as { detail?: unknown }).detail), /zelphine/);
    // Wrapped as another error's cause, as the Temporal SDK and application errors do.
    const wrapped = new Error('recording failed', { cause: error });
    const lines = logged((logger) => {
      logger.error({ err: error }, 'insert failed');
      logger.warn({ error: wrapped }, 'Activity failed');
    });
    assert.equal(lines.length, 2);
    const err = lines[0].err as Record<string, unknown>;
    assert.equal(err.code, '23505');
    assert.equal(err.constraint, 'people_email_key');
    assert.equal(err.detail, undefined);
    assert.equal(
      err.message,
      'INSERT INTO people VALUES ($1, $2) - duplicate key value violates unique constraint "people_email_key"',
    );
    assert.match(String((lines[1].error as Record<string, unknown>).message), /^recording failed: INSERT INTO people/);
    for (const line of lines) assert.ok(!/zelphine|7700/.test(JSON.stringify(line)), JSON.stringify(line));
  });

  it('values that are not errors pass unchanged, and secrets stay redacted', () => {
    const [line] = logged((logger) =>
      logger.info({ error: 'a webhook record was rejected', authorization: 'Bearer s3cret' }, 'plain'),
    );
    assert.equal(line.error, 'a webhook record was rejected');
    assert.equal(line.authorization, '[redacted]');
  });
});
