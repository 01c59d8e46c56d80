import { appPaths, appSchemas } from './app';
import { auditPaths, auditSchemas } from './audit';
import { partnerCommonSchemas } from './common';
import { deliveryPaths, deliverySchemas } from './deliveries';
import { endpointPaths, endpointSchemas } from './endpoint';
import { feedPaths, feedSchemas } from './feed';
import { healthPaths, healthSchemas } from './health';
import { portalSessionPaths, portalSessionSchemas } from './portal-sessions';
import { recoveryPaths, recoverySchemas } from './recoveries';
import { signingSecretPaths, signingSecretSchemas } from './signing-secrets';
import { testEventPaths, testEventSchemas } from './test-events';

// The partner API in the OpenAPI document (tag `partner`), one module per resource, as api/partner/ routes them.

export const partnerApiPaths = {
  ...appPaths,
  ...deliveryPaths,
  ...feedPaths,
  ...healthPaths,
  ...auditPaths,
  ...recoveryPaths,
  ...endpointPaths,
  ...signingSecretPaths,
  ...testEventPaths,
  ...portalSessionPaths,
};

export const partnerApiSchemas = {
  ...partnerCommonSchemas,
  ...appSchemas,
  ...deliverySchemas,
  ...feedSchemas,
  ...healthSchemas,
  ...auditSchemas,
  ...recoverySchemas,
  ...endpointSchemas,
  ...signingSecretSchemas,
  ...testEventSchemas,
  ...portalSessionSchemas,
};
