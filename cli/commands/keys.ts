import { parseArgs } from 'node:util';
import { z } from 'zod';
import { type Command } from '../command';
import { databaseSubcommands, type DatabaseAction } from '../bootstrap';
import { cliActor } from '../../lib/actor';
import {
  DEFAULT_RESEAL_BATCH,
  keysStatus,
  resealAll,
  resealDryRun,
} from '../../application/personal-data/key-rotation';
import { UsageError } from '../../lib/errors';

const USAGE = [
  'Usage: partner-service keys status',
  '       partner-service keys reseal [--dry-run] [--batch-size N]',
  '',
  'The keys of PAYLOAD_ENCRYPTION_KEYS and what rests under them (docs/personal-data.md, "Key rotation runbook").',
  '',
  '  status  prints, as JSON, the stored bodies, response excerpts and ordering lane keys by key id and format',
  "          (v3: bound to their own row; v2: a redelivery's body bound to its original; legacy: before v2; clear),",
  '          what rests under keys no longer listed, and how many a reseal would rewrite.',
  '  reseal  seals every body, excerpt and lane key not yet under the first key in the v3 format again under it, in',
  `          short transactions of --batch-size rows (default ${DEFAULT_RESEAL_BATCH}, at most 10000), ` +
    `printing a progress`,
  '          line per batch on stderr and the counts as JSON at the end. Safe to stop and run again: what is left',
  '          is read from the rows. One run at a time: a second exits 2. --dry-run only counts.',
  '          Recorded in the audit trail as keys.reseal, as cli:<user>@<host>.',
].join('\n');

const batchSize = z.coerce.number().int().min(1).max(10_000);

function status(args: string[]): DatabaseAction {
  if (args.length) throw new UsageError('status takes no arguments');
  return (runtime, knex) => keysStatus(knex, runtime.config);
}

function reseal(args: string[]): DatabaseAction {
  const { values } = parseArgs({ args, options: { 'dry-run': { type: 'boolean' }, 'batch-size': { type: 'string' } } });
  const size = batchSize.safeParse(values['batch-size'] ?? DEFAULT_RESEAL_BATCH);
  if (!size.success) throw new UsageError('--batch-size must be a whole number from 1 to 10000');
  if (values['dry-run']) return (runtime, knex) => resealDryRun(knex, runtime.config);
  return (runtime, knex) =>
    resealAll(
      knex,
      runtime.config,
      { actor: cliActor() },
      {
        batchSize: size.data,
        // Progress for the operator, not a log line: it shows at every log level, and never on stdout.
        onBatch: (p) =>
          process.stderr.write(
            `keys reseal: batch ${p.batches}: ${p.bodies} bodies, ${p.excerpts} response excerpts and ` +
              `${p.lane_keys} ordering lane keys resealed, ${p.unreadable} unreadable; ${p.signing_secrets} ` +
              `signing secrets resealed\n`,
          ),
      },
    );
}

export const keysCommand: Command = databaseSubcommands(
  {
    name: 'keys',
    summary: 'Show what rests under each payload key, and reseal it under the newest',
    usage: USAGE,
    auditActions: { status: [], reseal: ['keys.reseal'] },
  },
  { status, reseal },
);
