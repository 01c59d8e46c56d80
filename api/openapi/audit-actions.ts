import type { AuditAction } from '../../lib/vocabulary';

// What each internal operation writes to the audit trail, stated in the OpenAPI document as `x-audit-actions`
// (docs/access.md, "Audit trail: what is recorded"). Every internal operation must be listed: a new one
// without its entry fails the document's build, and the least-privilege drill checks each listed action in
// a real trail. Reads write none; ingestion is no operator's change and writes none either.

const AUDIT_ACTIONS_BY_OPERATION: Readonly<Record<string, readonly AuditAction[]>> = {
  listWebhooks: [],
  startWebhook: [],
  getWebhook: [],
  redeliverWebhooks: ['webhooks.redeliver'],
  retryWebhookNow: ['webhook.retry_now'],
  cancelWebhook: ['webhook.cancel'],
  redeliverWebhook: ['webhook.redeliver'],
  getOrdering: [],
  skipOrderingKey: ['ordering.skip'],
  retryOrderingKey: ['ordering.retry'],
  getPartner: [],
  pausePartner: ['partner.pause'],
  resumePartner: ['partner.resume'],
  limitPartner: ['partner.limit'],
  requestErasure: ['erasure.request'],
  getErasure: [],
  listAuditEvents: [],
  verifyAuditTrail: [],
  // The partner API (/partner/v1): its changes are audited with the actor app:<app_id>.
  getPartnerApp: [],
  listPartnerWebhooks: [],
  listPartnerEvents: [],
  putPartnerConsumer: [],
  getPartnerConsumer: [],
  getPartnerWebhook: [],
  getPartnerWebhookBody: [],
  getPartnerHealth: [],
  listPartnerAudit: [],
  redeliverPartnerWebhook: ['webhook.redeliver'],
  startPartnerRecovery: ['recovery.start'],
  getPartnerRecovery: [],
  cancelPartnerRecovery: ['recovery.cancel'],
  getPartnerEndpoint: [],
  pausePartnerEndpoint: ['endpoint.pause'],
  resumePartnerEndpoint: ['endpoint.resume'],
  limitPartnerEndpoint: ['endpoint.limit'],
  createSigningSecret: ['signing_secret.create'],
  listSigningSecrets: [],
  deleteSigningSecret: ['signing_secret.delete'],
  sendPartnerTestEvent: ['test_event.send'],
  listPartnerEventTypes: [],
  createPortalLink: ['portal.link'],
  openPortalSession: ['portal.open'],
  closePortalSession: ['portal.close'],
};

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch']);

/** `paths` with `x-audit-actions` on each operation; throws for an operation this module does not list. */
export function withAuditActions<T extends Record<string, object>>(paths: T): T {
  const described = Object.entries(paths).map(([path, item]) => {
    const entries = Object.entries(item).map(([key, value]) => {
      if (!METHODS.has(key)) return [key, value];
      const { operationId } = value as { operationId: string };
      const actions = AUDIT_ACTIONS_BY_OPERATION[operationId];
      if (!actions)
        throw new Error(
          `${key.toUpperCase()} ${path} (${operationId}) does not say what it audits: list it in ` +
            `api/openapi/audit-actions.ts`,
        );
      return [key, { ...value, 'x-audit-actions': actions }];
    });
    return [path, Object.fromEntries(entries)];
  });
  return Object.fromEntries(described);
}
