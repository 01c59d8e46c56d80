import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { Command } from '../command';
import { bootstrap, openMigratedDatabase } from '../bootstrap';
import { ErasureRequestError, erasureStatus, parseErasureRequest, requestErasure } from '../../application/erasure';
import { createTemporalGateway } from '../../application/temporal-gateway';
import { cliActor } from '../../lib/actor';

const USAGE = [
  'Usage: partner-service erase --candidate-id ID [--company COMPANY_ID] [--wait]',
  '       partner-service erase --email ADDRESS [--company COMPANY_ID] [--wait]',
  '',
  "Erases one subject's webhooks, as POST /internal/v1/erasures does (docs/personal-data.md): every body and",
  'response excerpt naming the candidate id or e-mail address is removed, pending deliveries are cancelled and',
  'their Temporal runs deleted. The record keeps the time, the requester (cli:<user>@<host>), the counts and an HMAC',
  'of the subject, never the subject. Prints the erasure as JSON.',
  '',
  '  --company  only this company\'s webhooks.',
  '  --wait     follows the erasure until it is completed (Temporal deletes runs within a minute or so),',
  '             then prints it again.',
  '',
  'Exits 2 with one line for both subjects or neither, an empty id or a malformed address.',
].join('\n');

/** How often --wait reads the record. */
const WAIT_POLL_MS = 1000;

export const eraseCommand: Command = {
  name: 'erase',
  summary: "Erase a candidate's or an e-mail address's webhooks (bodies, excerpts, Temporal runs)",
  usage: USAGE,
  async run(args, { verbose }) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { 'candidate-id': { type: 'string' }, email: { type: 'string' }, company: { type: 'string' }, wait: { type: 'boolean', default: false } },
    });
    // Not echoed: a stray argument here is most likely the very address or id to erase.
    if (positionals.length) throw new ErasureRequestError([{ path: '(root)', message: 'unexpected argument: give the subject as --candidate-id ID or --email ADDRESS' }]);
    const { 'candidate-id': candidateId, email, company, wait } = values;
    if ((candidateId === undefined) === (email === undefined)) {
      throw new ErasureRequestError([{ path: '(root)', message: candidateId === undefined ? 'give --candidate-id or --email' : 'give --candidate-id or --email, not both' }]);
    }
    const body = { ...(candidateId !== undefined && { candidate_id: candidateId }), ...(email !== undefined && { email }), ...(company !== undefined && { company_id: company }) };
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
