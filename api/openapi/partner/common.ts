import type { AppScope } from '../../../lib/vocabulary';
import { DETAIL } from '../../listings/errors';
import { commonSchemas } from '../internal/common';

// What every partner API operation shares: its tag, the app's credentials, the scope it needs (`x-app-scope`,
// which test/partner-api/app-access.test.ts holds to the router's) and the answers of the app check.

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const json = (schema: object) => ({ 'application/json': { schema } });
export const error = (description: string) => ({ description, content: json(ref('PartnerError')) });

export const partnerCommonSchemas = {
  // The internal API's error body: the partner API answers through the same errors (api/internal/errors.ts).
  PartnerError: {
    ...commonSchemas.InternalError,
    description: "The listings' error body: `detail` always; `reason` a code where a client may branch on it.",
  },
};

/** The app check's answers (api/partner/app-auth.ts), on every partner operation. */
const appCheckErrors = {
  '403': error(
    `No credentials ("${DETAIL.notAuthenticated}"), a wrong or revoked app ("${DETAIL.authenticationFailed}"), ` +
      'an app without the scope the operation needs (`reason` missing_scope, `detail` names the scope), a portal ' +
      'session that ended (`reason` session_ended) or a write of one without its X-CSRF-Token (`reason` csrf_failed).',
  ),
  '429': {
    ...error("The app's request budget (PARTNER_API_REQUESTS_PER_MINUTE) is spent: `reason` over_budget."),
    headers: { 'Retry-After': { schema: { type: 'integer', minimum: 1 }, description: 'Seconds to wait.' } },
  },
};

/** A partner operation: tagged `partner`, by the app, needing `scope` (null: any app); its own answers first. */
export const partnerOperation = (
  scope: AppScope | null,
  operationId: string,
  summary: string,
  responses: Record<string, object>,
  extra: { description?: string; [key: string]: unknown } = {},
) => ({
  operationId,
  summary,
  tags: ['partner'],
  security: [{ AppId: [], AppKey: [] }, { PortalSession: [] }],
  'x-app-scope': scope,
  ...extra,
  description:
    (scope ? `Needs an app with the scope \`${scope}\`.` : 'Any app may call it, whatever its scopes.') +
    (extra.description ? `\n\n${extra.description}` : ''),
  responses: { ...responses, ...appCheckErrors, ...('403' in responses && { '403': responses['403'] }) },
});

/** A keyset-paged list: its page schema on 200, 400 for a bad query (one error per parameter), its query's fields. */
export const pagedListOperation = (
  scope: AppScope,
  operationId: string,
  summary: string,
  page: { schema: string; badQuery: string; parameters: object[] },
) =>
  partnerOperation(
    scope,
    operationId,
    summary,
    {
      '200': { description: 'One page.', content: json(ref(page.schema)) },
      '400': error(`${page.badQuery}: one error per parameter.`),
    },
    { parameters: page.parameters },
  );
