import { type TokenScope } from '../../../lib/vocabulary';
import { REVOCATION_BOUND_MS } from '../../../application/access/token-checker';

// What every internal operation shares: the helpers, the token check's answers and the one error body.

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const json = (schema: object) => ({ 'application/json': { schema } });
export const error = (description: string) => ({ description, content: json(ref('InternalError')) });
export const dateTime = { type: 'string', format: 'date-time' };
export const nullable = (schema: object) => ({ oneOf: [schema, { type: 'null' }] });
export const uuid = { type: 'string', format: 'uuid' };

/** A keyset-paged list's answer, newest first: the `next` link and up to `maxItems` rows of `item`. */
export const keysetPage = (maxItems: number, item: object) => ({
  type: 'object',
  additionalProperties: false,
  required: ['next', 'results'],
  properties: {
    next: { type: ['string', 'null'], description: 'The next page (keyset cursor), or null on the last one.' },
    results: { type: 'array', maxItems, description: 'Newest first.', items: item },
  },
});

/** JSON Schema cannot compare two fields, so the window's rule is stated in words where it answers 400. */
export const UNTIL_AFTER_SINCE = '`until` not later than `since`';

export const challenge = {
  'WWW-Authenticate': {
    schema: { type: 'string' },
    description: 'Bearer realm="internal", with error="invalid_token" for a token that was presented.',
  },
};
/** The answers of the token check (api/internal/bearer-auth.ts), on every internal operation. */
export const authErrors = {
  '401': {
    ...error('No bearer token, or an unknown, revoked or expired one; `detail` says which.'),
    headers: challenge,
  },
  '403': {
    ...error(
      'The token does not have the scope the operation needs: `reason` is `missing_scope` and `detail` names the ' +
        'token and the scope.',
    ),
    headers: {
      'WWW-Authenticate': {
        schema: { type: 'string' },
        description: 'Bearer realm="internal", error="insufficient_scope", scope="<the scopes>".',
      },
    },
  },
};
export const TOKEN_STORE_UNAVAILABLE =
  `or (\`reason\` token_store_unavailable) a named token cannot be checked: this process has not read the tokens ` +
  `from PostgreSQL for over ${REVOCATION_BOUND_MS / 1000} s`;
export const commonErrors = {
  ...authErrors,
  '503': error(
    `Temporal is unavailable or did not answer in time (\`detail\` says whether anything may have changed), ` +
      `${TOKEN_STORE_UNAVAILABLE}. Has Retry-After.`,
  ),
};

/** The operation's security requirement (any one of `scopes`) and the sentence its description starts with. */
export function scoped(scopes: readonly [TokenScope, ...TokenScope[]]) {
  const named = scopes.map((scope) => `\`${scope}\``).join(' or ');
  return {
    description: `Needs a token with the scope ${named} (or INTERNAL_API_TOKEN, which has every scope).`,
    security: scopes.map((scope) => ({ InternalToken: [scope] })),
  };
}

export const commonSchemas = {
  InternalError: {
    type: 'object',
    required: ['detail'],
    additionalProperties: false,
    properties: {
      detail: { type: 'string' },
      errors: {
        type: 'array',
        items: {
          type: 'object',
          required: ['path', 'message'],
          additionalProperties: false,
          properties: { path: { type: 'string' }, message: { type: 'string' } },
        },
      },
      reason: { type: 'string' },
    },
  },
};

/** An operation with its own answers, then the token check's; its own 503, if it has one, replaces the common one. */
export const operation = (
  scopes: readonly [TokenScope, ...TokenScope[]],
  operationId: string,
  summary: string,
  responses: Record<string, object>,
  extra: object = {},
) => ({
  operationId,
  summary,
  tags: ['internal'],
  ...scoped(scopes),
  ...extra,
  responses: { ...responses, ...commonErrors, ...('503' in responses && { '503': responses['503'] }) },
});

/** `GET …/{id}`: the one resource, or 404. */
export const getOne = (
  scopes: readonly [TokenScope, ...TokenScope[]],
  parameter: object,
  operationId: string,
  summary: string,
  schema: string,
  noun: string,
) => ({
  parameters: [parameter],
  get: operation(scopes, operationId, summary, {
    '200': { description: `The ${noun}.`, content: json(ref(schema)) },
    '404': error(`No such ${noun}.`),
  }),
});

/** The refusals of a route that reads and writes PostgreSQL only, which no Temporal outage can reach. */
export const postgresOnlyErrors = {
  ...authErrors,
  '503': error(
    `A named token cannot be checked (\`reason\` token_store_unavailable): this process has not read the tokens ` +
      `from PostgreSQL for over ${REVOCATION_BOUND_MS / 1000} s. Has Retry-After.`,
  ),
};

export const badBody = {
  '400': error('Invalid JSON or field: one error per field.'),
  '413': error('Body over 1 MB.'),
  '415': error('Not application/json.'),
};
