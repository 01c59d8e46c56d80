import { error, json, partnerOperation, ref } from './common';

// The endpoint's signing secrets (api/partner/signing-secrets-routes.ts; docs/partners.md, "Signing secrets").

const dateTime = { type: 'string', format: 'date-time' };
const nullableDateTime = { type: ['string', 'null'], format: 'date-time' };
/** An object whose every property is always present, and no other. */
const closedObject = (properties: Record<string, object>) => ({
  type: 'object',
  additionalProperties: false,
  required: Object.keys(properties),
  properties,
});

export const signingSecretSchemas = {
  CreatedSigningSecret: closedObject({
    id: { type: 'string', format: 'uuid' },
    secret: {
      type: 'string',
      pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
      description:
        'The Standard Webhooks secret (`whsec_` and base64 of 32 random bytes). Shown in this answer only: the ' +
        'service never shows it again.',
    },
    created_at: dateTime,
    expires_at: { type: 'null', description: 'A new secret has no end until a newer one replaces it.' },
  }),
  SigningSecretSummary: closedObject({
    id: {
      type: 'string',
      description:
        "A uuid for the API's secrets; `config-<n>` for the n-th of PARTNER_SIGNING_SECRETS, which the API cannot " +
        'delete.',
    },
    created_at: { ...nullableDateTime, description: 'Null for a secret of the configuration.' },
    expires_at: {
      ...nullableDateTime,
      description: 'When it stops signing (the overlap after a newer secret); null while nothing replaces it.',
    },
    last_used_at: {
      ...nullableDateTime,
      description: "The last POST it signed, to the minute; null before its first, and for the configuration's.",
    },
    source: { type: 'string', enum: ['api', 'configuration'] },
  }),
  SigningSecretList: closedObject({
    signing_secrets: {
      type: 'array',
      items: ref('SigningSecretSummary'),
      description: "Every secret that signs now, oldest first, the configuration's first. Never a secret.",
    },
  }),
};

const idParameter = {
  name: 'secret_id',
  in: 'path',
  required: true,
  schema: { type: 'string' },
  description: 'A secret id from the list (any other value answers 404).',
};

export const signingSecretPaths = {
  '/partner/v1/signing-secrets': {
    post: partnerOperation(
      'endpoint:manage',
      'createSigningSecret',
      'Create a signing secret (shown once)',
      {
        '201': {
          description: 'The new secret, shown this once.',
          headers: { 'Cache-Control': { schema: { type: 'string', enum: ['no-store'] } } },
          content: json(ref('CreatedSigningSecret')),
        },
        '503': error(
          'This deployment stores its data encrypted and this api process runs without PAYLOAD_ENCRYPTION_KEYS ' +
            '(`reason` encryption_required): nothing was stored.',
        ),
      },
      {
        description:
          'Every POST is signed with it from within a few seconds on. Each secret that signed until now gets an end, ' +
          'PARTNER_SIGNING_SECRET_OVERLAP_HOURS (24 h by default) away: until then every POST carries one ' +
          'signature per live secret in its `webhook-signature` header, so a verifier with either secret accepts ' +
          'it. Audited as `signing_secret.create` (never the secret).',
      },
    ),
    get: partnerOperation('endpoint:manage', 'listSigningSecrets', 'List the signing secrets (never a secret)', {
      '200': { description: 'The live secrets.', content: json(ref('SigningSecretList')) },
    }),
  },
  '/partner/v1/signing-secrets/{secret_id}': {
    delete: partnerOperation(
      'endpoint:manage',
      'deleteSigningSecret',
      'End a signing secret now',
      {
        '204': { description: 'It no longer signs (within a few seconds on every worker).' },
        '404': error('No live secret has this id.'),
        '409': error(
          'It is the current secret, which no newer secret replaces (`reason` current_secret: create one first), ' +
            'or a secret of PARTNER_SIGNING_SECRETS (`reason` configuration_secret), which only an operator removes.',
        ),
      },
      { parameters: [idParameter], description: 'Audited as `signing_secret.delete`, refusals too.' },
    ),
  },
};
