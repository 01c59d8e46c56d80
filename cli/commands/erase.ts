import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { type Command } from '../command';
import { isCanonicalUuid } from '../../lib/validation';
import { bootstrap, openMigratedDatabase } from '../bootstrap';
import { erasureStatus, parseErasureRequest, requestErasure } from '../../application/personal-data/erasure';
import { createTemporalGateway } from '../../temporal/gateway';
import { cliActor } from '../../lib/actor';
import { UsageError, InvalidRequestError } from '../../lib/errors';

const USAGE = [
  'Usage: partner-service erase --candidate-id ID [--company COMPANY_ID] [--wait]',
  '       partner-service erase --email ADDRESS|- [--company COMPANY_ID] [--wait]',
  '       partner-service erase --phone NUMBER|- [--company COMPANY_ID] [--wait]',
  '       partner-service erase status ERASURE_ID',
  '',
  "Erases one subject's webhooks, as POST /internal/v1/erasures does (docs/personal-data.md): every body and",
  'response excerpt naming the candidate id, the e-mail address (anywhere in a body) or the phone number is',
  'removed, pending deliveries are cancelled, and every Temporal run of those webhooks is deleted. The record keeps',
  'the time, the requester (cli:<user>@<host>), the counts and HMACs of the subject, never the subject. Prints the',
  'erasure as JSON.',
  '',
  '  -             for --email and --phone: read the value from standard input (one line), so it stays out',
  '                of `ps` and the shell history.',
  "  --company     only this company's webhooks.",
  '  --wait        follows the erasure until it is completed (every run gone from Temporal, every start',
  '                settled: a minute or so), then prints it again.',
  '',
  '`status` prints one erasure as JSON; a pending one says why in pending_reason (exit 1: no such erasure).',
  '',
  'Exits 2 with one line for several subjects or none, an empty id, a malformed address or phone number, or a',
  'process without the index keys the deployment uses (SUBJECT_INDEX_KEYS).',
].join('\n');

/** The subject options, as the request's fields name them. */
const SUBJECT_OPTIONS = { 'candidate-id': 'candidate_id', email: 'email', phone: 'phone' } as const;

/** One line of standard input, without its line end: the value of `--email -` or `--phone -`. */
async function readStdinLine(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text.replace(/\r?\n$/, '');
}

/** How often --wait reads the record. */
const WAIT_POLL_MS = 1000;

export const eraseCommand: Command = {
  name: 'erase',
  auditActions: { '': ['erasure.request'], status: [] },
  summary: "Erase a candidate's, an e-mail address's or a phone number's webhooks (bodies, excerpts, Temporal runs)",
  usage: USAGE,
  async run(args, { verbose }) {
    if (args[0] === 'status') return printStatus(args.slice(1), verbose);
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        'candidate-id': { type: 'string' },
        email: { type: 'string' },
        phone: { type: 'string' },
        company: { type: 'string' },
        wait: { type: 'boolean', default: false },
      },
    });
    // Not echoed: a stray argument here is most likely the very address or id to erase.
    if (positionals.length) {
      throw new InvalidRequestError([
        {
          path: '(root)',
          message: 'unexpected argument: give the subject as --candidate-id ID, --email ADDRESS or --phone NUMBER',
        },
      ]);
    }
    const given = (Object.keys(SUBJECT_OPTIONS) as Array<keyof typeof SUBJECT_OPTIONS>).filter(
      (option) => values[option] !== undefined,
    );
    if (given.length !== 1) {
      throw new InvalidRequestError([
        {
          path: '(root)',
          message: given.length
            ? 'give one of --candidate-id, --email or --phone, not several'
            : 'give --candidate-id, --email or --phone',
        },
      ]);
    }
    const [option] = given;
    const { company, wait } = values;
    const value = option !== 'candidate-id' && values[option] === '-' ? await readStdinLine() : values[option]!;
    const body = { [SUBJECT_OPTIONS[option]]: value, ...(company !== undefined && { company_id: company }) };
    // Checked before the configuration and the database: a bad value exits 2 wherever the command runs.
    parseErasureRequest(body);
    const runtime = bootstrap({ logsTo: 'stderr', verbose });
    try {
      const { knex } = await openMigratedDatabase(runtime);
      const gateway = createTemporalGateway(runtime.config, runtime.logger);
      runtime.shutdown.add('temporal client', () => gateway.close());
      const { erasureId } = await requestErasure(knex, gateway, runtime.config, { actor: cliActor() }, body);
      let view = await erasureStatus(knex, erasureId);
      process.stdout.write(`${JSON.stringify(view)}\n`);
      if (!wait) return 0;
      while (view.status !== 'completed') {
        await delay(WAIT_POLL_MS, undefined, { signal: runtime.shutdown.signal });
        view = await erasureStatus(knex, erasureId);
      }
      process.stdout.write(`${JSON.stringify(view)}\n`);
      return 0;
    } finally {
      await runtime.shutdown.shutdown();
    }
  },
};

/** `erase status ERASURE_ID`: the record as GET /internal/v1/erasures/ID shows it. */
async function printStatus(args: string[], verbose: boolean): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals.length !== 1 || !isCanonicalUuid(positionals[0]))
    throw new UsageError('status takes one erasure id (a UUID, as the request printed it)');
  const runtime = bootstrap({ logsTo: 'stderr', verbose });
  try {
    const { knex } = await openMigratedDatabase(runtime);
    process.stdout.write(`${JSON.stringify(await erasureStatus(knex, positionals[0]))}\n`);
    return 0;
  } finally {
    await runtime.shutdown.shutdown();
  }
}
