import assert from 'node:assert/strict';
import { parseArgs } from 'node:util';
import { failureOf, type CliFailure } from '../../../cli/errors';
import { commandLogLevel } from '../../../cli/log-level';
import {
  UsageError,
  InvalidRequestError,
  WebhookValidationError,
  NotFoundError,
  WebhookConflictError,
  ExpiredLinksError,
  WebhookStartConflictError,
  TemporalSetupError,
  TemporalUnavailableError,
  OperationUnavailableError,
  ConfigError,
  CommandFailure,
  DirectoryImportError,
  UnknownCompaniesError,
  DatabaseUnusableError,
} from '../../../lib/errors';

const command = { name: 'webhooks', usage: 'Usage: partner-service webhooks …' };
const map = (error: unknown, verbose = false): CliFailure => failureOf(error, command, { verbose });
const usage = (line: string): CliFailure => ({
  exitCode: 2,
  message: `partner-service webhooks: ${line}\n\nUsage: partner-service webhooks …`,
});
const failed = (message: string): CliFailure => ({ exitCode: 1, message });

function parseArgsError(): unknown {
  try {
    parseArgs({ args: ['--bogus'], options: {} });
  } catch (error) {
    return error;
  }
  assert.fail('parseArgs accepted an unknown option');
}

describe('the CLI error map', () => {
  it('bad usage exits 2 with one line naming the command, then its usage', () => {
    assert.deepEqual(map(new UsageError('expected exactly one FILE.json')), usage('expected exactly one FILE.json'));
    assert.deepEqual(map(parseArgsError()), usage("Unknown option '--bogus'"));
  });

  it('a value the command line got wrong (a filter, a pause reason, a token name) exits 2 with one line naming the command, without the usage', () => {
    const line = (message: string): CliFailure => ({ exitCode: 2, message: `partner-service webhooks: ${message}` });
    assert.deepEqual(
      map(
        new InvalidRequestError([
          { path: 'status', message: 'bad' },
          { path: 'limit', message: 'must be at least 1' },
        ]),
      ),
      line('status: bad; limit: must be at least 1'),
    );
    assert.deepEqual(
      map(new InvalidRequestError([{ path: 'reason', message: 'must say why (1 to 500 characters)' }])),
      line('reason: must say why (1 to 500 characters)'),
    );
    assert.deepEqual(map(new InvalidRequestError('--expires-in "0d" is zero')), line('--expires-in "0d" is zero'));
  });

  it('an unknown command names no command and shows the program help', () => {
    assert.deepEqual(
      failureOf(new UsageError('unknown command "frobnicate"'), { usage: 'Usage: partner-service <command>' }),
      {
        exitCode: 2,
        message: 'partner-service: unknown command "frobnicate"\n\nUsage: partner-service <command>',
      },
    );
  });

  it('configuration errors exit 2 and command failures 1, each with its own line', () => {
    assert.deepEqual(map(new ConfigError('Invalid configuration: PORT must be a whole number')), {
      exitCode: 2,
      message: 'Invalid configuration: PORT must be a whole number',
    });
    assert.deepEqual(
      map(new CommandFailure('partner-service apps revoke: no app "x"')),
      failed('partner-service apps revoke: no app "x"'),
    );
  });

  it('invalid input files and events exit 1 with a line per JSON path', () => {
    assert.deepEqual(
      map(
        new DirectoryImportError([
          'users[0].emails[1]: not an e-mail address',
          'company_users[0].role: must be one of admin',
        ]),
      ),
      failed(
        'Import failed; nothing was written.\nusers[0].emails[1]: not an e-mail address\ncompany_users[0].role: must be one of admin',
      ),
    );
    assert.deepEqual(
      map(new WebhookValidationError([{ path: 'data.company_name', message: 'required' }])),
      failed('Invalid webhook event; nothing was sent.\ndata.company_name: required'),
    );
    assert.deepEqual(
      map(new UnknownCompaniesError(['acmee', 'x'])),
      failed('partner-service apps create: unknown company "acmee", "x"; nothing was written.'),
    );
  });

  it('an ingestion that Temporal or a concurrent start refuses says the webhook was not accepted', () => {
    assert.deepEqual(
      map(new TemporalUnavailableError('cannot connect to 127.0.0.1:1 (refused)')),
      failed('Webhook not accepted: Temporal is unavailable: cannot connect to 127.0.0.1:1 (refused)'),
    );
    assert.deepEqual(
      map(new TemporalSetupError('Temporal refused to start the webhook workflow: denied')),
      failed('Webhook not accepted: Temporal refused to start the webhook workflow: denied'),
    );
    assert.deepEqual(
      map(new WebhookStartConflictError('e-1')),
      failed(
        'Webhook not accepted: Concurrent requests with event_id e-1 are starting its delivery; retry with the same event_id.',
      ),
    );
  });

  it('an ingestion whose start Temporal did not answer never says not accepted', () => {
    assert.deepEqual(
      map(new TemporalUnavailableError('the workflow could not be started (deadline exceeded)', true)),
      failed(
        'Webhook outcome unknown: Temporal did not answer in time (the workflow could not be started (deadline exceeded)); send it again with the same event_id to learn whether it was accepted.',
      ),
    );
  });

  it("an operation's missing webhook, wrong state or Temporal outage exits 1 with the reason alone", () => {
    assert.deepEqual(map(new NotFoundError('webhook', 'w-1')), failed('No webhook w-1.'));
    assert.deepEqual(
      map(new WebhookConflictError('Cannot retry a delivery whose status is delivered.')),
      failed('Cannot retry a delivery whose status is delivered.'),
    );
    const expired = new ExpiredLinksError(
      [{ kind: 'files', expiresAt: new Date('2026-01-02T00:00:00Z') }],
      new Date('2026-01-01T00:00:00Z'),
    );
    assert.deepEqual(map(expired), failed(expired.message));
    assert.deepEqual(
      map(new OperationUnavailableError('cannot connect to t:7233 (refused)', false)),
      failed('Temporal is unavailable: cannot connect to t:7233 (refused)'),
    );
  });

  it('a database the service cannot use exits 1 with its line', () => {
    assert.deepEqual(
      map(
        new DatabaseUnusableError(
          'PostgreSQL 13.23 is not supported: the service needs PostgreSQL 14 or newer (DATABASE_URL)',
        ),
      ),
      failed(
        'partner-service: PostgreSQL 13.23 is not supported: the service needs PostgreSQL 14 or newer (DATABASE_URL)',
      ),
    );
    assert.deepEqual(
      map(new DatabaseUnusableError('the embedded PostgreSQL in /d is held by process 7')),
      failed('partner-service: the embedded PostgreSQL in /d is held by process 7'),
    );
  });

  it('anything else exits 1 with one short line, and the stack only with --verbose', () => {
    const error = new Error('connect ECONNREFUSED 127.0.0.1:9');
    assert.deepEqual(map(error), failed('partner-service: connect ECONNREFUSED 127.0.0.1:9'));
    const verbose = map(error, true);
    assert.equal(verbose.exitCode, 1);
    assert.equal(verbose.message, `partner-service: connect ECONNREFUSED 127.0.0.1:9\n${error.stack}`);
    assert.match(verbose.message, /\n\s+at /);
    // Node's AggregateError for a host whose every address refuses has no message of its own.
    const aggregate = new AggregateError([
      Object.assign(new Error('connect ECONNREFUSED ::1:9'), { code: 'ECONNREFUSED' }),
    ]);
    assert.deepEqual(map(aggregate), failed('partner-service: connect ECONNREFUSED ::1:9'));
    assert.deepEqual(map('a string'), failed('partner-service: a string'));
  });
});

describe('the log level of a command', () => {
  const level = (configured: Parameters<typeof commandLogLevel>[0]['configured'], oneShot: boolean, verbose: boolean) =>
    commandLogLevel({ configured, oneShot, verbose });

  it('a one-shot command logs warnings only unless LOG_LEVEL is set or --verbose is given', () => {
    assert.equal(level(undefined, true, false), 'warn');
    assert.equal(level('info', true, false), 'info');
    assert.equal(level('silent', true, false), 'silent');
    assert.equal(level(undefined, true, true), 'info');
  });

  it('a service logs at LOG_LEVEL, info by default', () => {
    assert.equal(level(undefined, false, false), 'info');
    assert.equal(level('error', false, false), 'error');
  });

  it('--verbose lowers any level to info and keeps debug and trace', () => {
    assert.deepEqual(
      ['fatal', 'error', 'warn', 'info', 'silent'].map((l) => level(l as 'warn', true, true)),
      ['info', 'info', 'info', 'info', 'info'],
    );
    assert.equal(level('debug', true, true), 'debug');
    assert.equal(level('trace', false, true), 'trace');
  });
});
