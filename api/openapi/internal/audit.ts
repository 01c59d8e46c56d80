import { CHAIN_PROBLEM_KINDS } from '../../../application/access/audit-verify';
import { AUDIT_ACTIONS, AUDIT_OUTCOMES, AUDIT_PHASES } from '../../../lib/vocabulary';
import { auditQuery, MAX_AUDIT_PAGE } from '../../../application/access/audit-log';
import { zodQueryParameters } from '../zod-json-schema';
import { ref, json, error, dateTime, keysetPage, scoped, postgresOnlyErrors } from './common';

// The audit trail: read only, PostgreSQL only (no Temporal outage reaches it), scope `read`.
export const auditSchemas = {
  AuditPage: keysetPage(MAX_AUDIT_PAGE, {
    type: 'object',
    additionalProperties: false,
    required: [
      'id',
      'seq',
      'at',
      'actor',
      'action',
      'target',
      'parameters',
      'phase',
      'operation_id',
      'outcome',
      'outcome_recorded',
      'error',
      'request_id',
      'hash',
    ],
    properties: {
      id: { type: 'integer', minimum: 1 },
      seq: { type: 'integer', minimum: 1, description: 'Its place in the hash chain.' },
      at: dateTime,
      actor: {
        type: 'string',
        description: "A token's name, `INTERNAL_API_TOKEN` (the shared token) or `cli:<user>@<host>`.",
      },
      action: { type: 'string', enum: [...AUDIT_ACTIONS] },
      target: {
        type: ['string', 'null'],
        description: 'A webhook id, the task queue, a token name; null where the action has none.',
      },
      parameters: { type: 'object', description: 'What the change was asked with: never a secret nor personal data.' },
      phase: {
        type: 'string',
        enum: [...AUDIT_PHASES],
        description:
          '`intent`: written before a call to Temporal (or another step outside one transaction); `outcome`: how ' +
          'it ended, or a change made in one transaction.',
      },
      operation_id: { type: 'string', format: 'uuid', description: 'Shared by an intent and its outcome.' },
      outcome: { type: ['string', 'null'], enum: [...AUDIT_OUTCOMES, null], description: 'Null on an intent row.' },
      outcome_recorded: {
        type: 'boolean',
        description:
          'False only for an intent whose outcome row does not exist (a crash between the two, or a call still ' +
          'running).',
      },
      error: { type: ['string', 'null'], description: 'Why the change failed; null when it succeeded.' },
      request_id: { type: ['string', 'null'], description: "The API request's X-Request-Id; null for the CLI." },
      hash: {
        type: 'string',
        description: "SHA-256 over the previous row's hash and this row's content, in 64 hex digits.",
      },
    },
  }),
  AuditVerification: {
    type: 'object',
    additionalProperties: false,
    required: ['intact', 'rows', 'anchor', 'head', 'first_problem', 'problems', 'problems_total'],
    properties: {
      intact: { type: 'boolean' },
      rows: { type: 'integer', minimum: 0 },
      anchor: ref('AuditChainEnd'),
      head: ref('AuditChainEnd'),
      first_problem: { oneOf: [ref('AuditChainProblem'), { type: 'null' }] },
      problems: { type: 'array', maxItems: 100, items: ref('AuditChainProblem') },
      problems_total: { type: 'integer', minimum: 0 },
    },
  },
  AuditChainEnd: {
    type: 'object',
    additionalProperties: false,
    required: ['seq', 'hash'],
    properties: {
      seq: { type: 'integer', minimum: 0 },
      hash: { type: 'string', description: 'SHA-256, 64 hex digits (64 zeros for the anchor before any purge).' },
    },
  },
  AuditChainProblem: {
    type: 'object',
    additionalProperties: false,
    required: ['kind', 'position', 'id', 'detail'],
    properties: {
      kind: { type: 'string', enum: [...CHAIN_PROBLEM_KINDS] },
      position: { type: 'integer', minimum: 0, description: 'The seq where the chain breaks.' },
      id: { type: ['integer', 'null'] },
      detail: { type: 'string' },
    },
  },
};

export const auditPaths = {
  '/internal/v1/audit': {
    get: {
      operationId: 'listAuditEvents',
      summary: 'The audit trail: every change an operator made, through the API or the CLI, newest first',
      tags: ['internal'],
      ...scoped(['read']),
      parameters: zodQueryParameters(auditQuery),
      responses: {
        '200': { description: 'One page.', content: json(ref('AuditPage')) },
        '400': error('A bad filter, limit or cursor: one error per parameter.'),
        ...postgresOnlyErrors,
      },
    },
  },
  '/internal/v1/audit/verify': {
    get: {
      operationId: 'verifyAuditTrail',
      summary:
        "Walks the audit trail's hash chain and names every row missing, edited or out of place (as " +
        '`partner-service audit verify`)',
      tags: ['internal'],
      ...scoped(['read']),
      responses: {
        '200': { description: 'The report, intact or not (`intact`).', content: json(ref('AuditVerification')) },
        ...postgresOnlyErrors,
      },
    },
  },
};
