import { auditPaths, auditSchemas } from './audit';
import { commonSchemas } from './common';
import { erasurePaths, erasureSchemas } from './erasures';
import { orderingPaths, orderingSchemas } from './ordering';
import { partnerPaths, partnerSchemas } from './partner';
import { webhookPaths, webhookResourceSchemas } from './webhooks';

// The internal API in the OpenAPI document, one module per resource: every operation states the token scope(s)
// it needs (the routers' requireScope; test/access/token-matrix.test.ts holds both to the same list). Every query
// and body the routes check with zod is generated from that zod schema; the answers are stated here.

export const internalPaths = { ...webhookPaths, ...orderingPaths, ...partnerPaths, ...erasurePaths, ...auditPaths };

export const internalSchemas = {
  ...commonSchemas,
  ...webhookResourceSchemas,
  ...orderingSchemas,
  ...partnerSchemas,
  ...erasureSchemas,
  ...auditSchemas,
};
