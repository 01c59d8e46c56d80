import { AUDIT_ACTIONS, AUDIT_OUTCOMES, AUDIT_PHASES } from '../../../lib/vocabulary';
import { MAX_PARTNER_AUDIT_PAGE, partnerAuditQuery } from '../../../application/access/partner-audit';
import { zodQueryParameters } from '../zod-json-schema';
import { pagedListOperation } from './common';

// The audit trail of the partner's deliveries (`deliveries:read`): api/partner/audit-routes.ts.

const ROW_FIELDS = {
  id: { type: 'integer', minimum: 1 },
  seq: { type: 'integer', minimum: 1, description: 'Its place in the hash chain.' },
  at: { type: 'string', format: 'date-time' },
  actor: {
    type: 'string',
    description: "`operator` for the service's operators (never a name or a host); `app:<app_id>` for an app.",
  },
  action: { type: 'string', enum: [...AUDIT_ACTIONS] },
  target: { type: ['string', 'null'], description: 'A webhook id, the task queue, a recovery id; or null.' },
  parameters: {
    type: 'object',
    description: 'What the change was asked with: never a secret nor personal data (an erasure: its company only).',
  },
  phase: { type: 'string', enum: [...AUDIT_PHASES], description: '`intent` before a call; `outcome` how it ended.' },
  operation_id: { type: 'string', format: 'uuid', description: 'Shared by an intent and its outcome.' },
  outcome: { type: ['string', 'null'], enum: [...AUDIT_OUTCOMES, null] },
  outcome_recorded: { type: 'boolean' },
  error: { type: ['string', 'null'] },
  hash: { type: 'string', description: "SHA-256 over the previous row's hash and this row's content (hex)." },
};

export const auditSchemas = {
  PartnerAuditPage: {
    type: 'object',
    additionalProperties: false,
    required: ['next', 'results'],
    properties: {
      next: { type: ['string', 'null'], description: 'The page of older rows, or null on the last one.' },
      results: {
        type: 'array',
        maxItems: MAX_PARTNER_AUDIT_PAGE,
        description: 'Newest first.',
        items: {
          type: 'object',
          additionalProperties: false,
          required: Object.keys(ROW_FIELDS),
          properties: ROW_FIELDS,
        },
      },
    },
  },
};

export const auditPaths = {
  '/partner/v1/audit': {
    get: pagedListOperation('deliveries:read', 'listPartnerAudit', 'The audit trail of your deliveries and endpoint', {
      schema: 'PartnerAuditPage',
      badQuery: 'A bad window, limit or cursor, or `until` not later than `since`',
      parameters: zodQueryParameters(partnerAuditQuery),
    }),
  },
};
