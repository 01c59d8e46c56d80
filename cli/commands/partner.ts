import { parseArgs } from 'node:util';
import { type Command } from '../command';
import { databaseSubcommands, type Runtime } from '../bootstrap';
import { cliActor } from '../../lib/actor';
import {
  limitPartner,
  partnerStatus,
  pausePartner,
  resumePartner,
  type PartnerStatus,
} from '../../application/partner/partner-operator';
import { UsageError } from '../../lib/errors';

const USAGE = [
  'Usage: partner-service partner status',
  '       partner-service partner pause --reason TEXT',
  '       partner-service partner resume',
  '       partner-service partner limit PER_SECOND | --reset',
  '',
  'Controls the partner gate that every worker of TEMPORAL_TASK_QUEUE shares (docs/partner-protection.md).',
  '',
  '  status  prints the state (active, paused, tripped, throttled), the reason, since when, the deliveries',
  '          held, the cap in force and the breaker, as JSON.',
  '  pause   holds every delivery: webhooks are still accepted, no POST leaves any worker, and the held',
  '          attempts are not spent. The pause survives restarts.',
  '  resume  ends the pause: held deliveries go out at the cap, oldest first.',
  '  limit   sets the POSTs per second of all workers together, at once and without a restart;',
  '          --reset goes back to PARTNER_MAX_PER_SECOND.',
].join('\n');

type Action = (runtime: Runtime, knex: Parameters<typeof partnerStatus>[0]) => Promise<PartnerStatus>;

function pause(args: string[]): Action {
  const { values } = parseArgs({ args, options: { reason: { type: 'string' } } });
  if (values.reason === undefined) throw new UsageError('--reason is required: say why, for the status and the log');
  return (runtime, knex) =>
    pausePartner(knex, runtime.config, runtime.logger, { actor: cliActor() }, { reason: values.reason });
}

function limit(args: string[]): Action {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { reset: { type: 'boolean', default: false } },
  });
  if (values.reset === positionals.length > 0 || positionals.length > 1)
    throw new UsageError('expected PER_SECOND (a whole number) or --reset');
  const perSecond = values.reset ? null : /^\d+$/.test(positionals[0]) ? Number(positionals[0]) : Number.NaN;
  if (Number.isNaN(perSecond))
    throw new UsageError(`PER_SECOND must be a whole number, not ${JSON.stringify(positionals[0])}`);
  return (runtime, knex) =>
    limitPartner(knex, runtime.config, runtime.logger, { actor: cliActor() }, { max_per_second: perSecond });
}

function noArguments(name: string, action: Action): (args: string[]) => Action {
  return (args) => {
    if (args.length) throw new UsageError(`${name} takes no arguments`);
    return action;
  };
}

const SUBCOMMANDS: Record<string, (args: string[]) => Action> = {
  status: noArguments('status', (runtime, knex) => partnerStatus(knex, runtime.config)),
  pause,
  resume: noArguments('resume', (runtime, knex) =>
    resumePartner(knex, runtime.config, runtime.logger, { actor: cliActor() }),
  ),
  limit,
};

export const partnerCommand: Command = databaseSubcommands(
  {
    name: 'partner',
    summary: 'Show, pause, resume and cap the deliveries to the partner',
    usage: USAGE,
    auditActions: { status: [], pause: ['partner.pause'], resume: ['partner.resume'], limit: ['partner.limit'] },
  },
  SUBCOMMANDS,
);
