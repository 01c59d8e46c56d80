import { APP_SCOPES } from '../../../lib/vocabulary';
import { json, partnerOperation, ref } from './common';

export const appSchemas = {
  PartnerApp: {
    type: 'object',
    additionalProperties: false,
    required: ['app_id', 'name', 'scopes', 'company_ids'],
    properties: {
      app_id: { type: 'string' },
      name: { type: 'string' },
      scopes: { type: 'array', items: { type: 'string', enum: [...APP_SCOPES] } },
      company_ids: { type: 'array', items: { type: 'string' }, description: 'The companies whose data it sees.' },
    },
  },
};

export const appPaths = {
  '/partner/v1/app': {
    get: partnerOperation(null, 'getPartnerApp', 'The calling app: its scopes and companies', {
      '200': { description: 'The app.', content: json(ref('PartnerApp')) },
    }),
  },
};
