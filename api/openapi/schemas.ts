import { COMPANY_ROLES, JOB_ROLES } from '../../lib/vocabulary';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../listings/paging/page-params';

/** Admins and owners of a company see all of its jobs, so they appear in job listings too. */
const JOB_LISTING_ROLES = ['admin', 'owner', ...JOB_ROLES];

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const userListOf = (item: string, description: string) => ({
  type: 'object',
  description,
  required: ['count', 'next', 'previous', 'results'],
  additionalProperties: false,
  properties: {
    count: { type: 'integer', minimum: 0, description: 'Total number of users in the listing.' },
    next: {
      type: ['string', 'null'],
      format: 'uri',
      description: 'Absolute URL of the next page, or null on the last page.',
    },
    previous: {
      type: ['string', 'null'],
      format: 'uri',
      description: 'Absolute URL of the previous page, or null on the first page.',
    },
    results: {
      type: 'array',
      maxItems: MAX_PAGE_SIZE,
      items: ref(item),
      description: 'The users on this page, by id ascending.',
    },
  },
});

const userWithRoles = (roles: readonly string[]) => ({
  type: 'object',
  allOf: [ref('User')],
  properties: { role: { enum: [...roles] } },
});

/** JSON Schemas (OpenAPI 3.1 dialect) of the bodies the listing endpoints send. */
export const schemas = {
  User: {
    type: 'object',
    description: 'A user who has access to the company or job (spec 2.5).',
    required: ['id', 'first_name', 'last_name', 'email_primary', 'emails', 'is_agency_user', 'role'],
    additionalProperties: false,
    properties: {
      id: { type: 'integer', minimum: 1, description: 'User ID' },
      first_name: { type: 'string' },
      last_name: { type: 'string' },
      // idn-email: the users table is not limited to what the import's check accepts, and may hold internationalised
      // addresses (RFC 6531) such as ÉMILE@zola.test; the listing answers them as stored.
      email_primary: { type: 'string', format: 'idn-email' },
      emails: {
        type: 'array',
        minItems: 1,
        items: { type: 'string', format: 'idn-email' },
        description: 'All addresses, the primary one first.',
      },
      is_agency_user: { type: 'boolean' },
      role: { type: 'string', enum: [...new Set([...COMPANY_ROLES, ...JOB_LISTING_ROLES])] },
    },
  },
  CompanyUser: userWithRoles(COMPANY_ROLES),
  JobUser: userWithRoles(JOB_LISTING_ROLES),
  PaginatedCompanyUserList: userListOf(
    'CompanyUser',
    `One page (${DEFAULT_PAGE_SIZE} users by default) of a company's users.`,
  ),
  PaginatedJobUserList: userListOf('JobUser', `One page (${DEFAULT_PAGE_SIZE} users by default) of a job's users.`),
  Error: {
    type: 'object',
    description: 'Every error answer, as in Django REST Framework.',
    required: ['detail'],
    additionalProperties: false,
    properties: { detail: { type: 'string' } },
  },
  ViewMetadata: {
    type: 'object',
    description: 'The answer to OPTIONS, as DRF SimpleMetadata gives it.',
    required: ['name', 'description', 'renders', 'parses'],
    additionalProperties: false,
    properties: {
      name: { type: 'string' },
      description: { type: 'string' },
      renders: { type: 'array', items: { type: 'string' } },
      parses: { type: 'array', items: { type: 'string' } },
    },
  },
} as const;
