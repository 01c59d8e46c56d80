import type Router from '@koa/router';
import { createRouter } from '../router';
import type { ApiDependencies } from '../context';
import { requireAppAccess, type ListingState, type TargetOf } from './app-auth';
import { answerListingErrors } from './errors';
import { listUsers } from './list-users';
import { readOnlyMethods, type ListingDescription } from './methods';

interface Listing {
  readonly path: string;
  readonly view: ListingDescription;
  readonly targetOf: TargetOf;
}

const LISTINGS: readonly Listing[] = [
  {
    path: 'companies/:company_pk/users',
    view: { name: 'Company Users', description: 'The users who have access to a company.' },
    targetOf: (params) => ({ kind: 'company', companyId: params.company_pk }),
  },
  {
    path: 'jobs/:job_pk/users',
    view: { name: 'Job Users', description: 'The users who have access to a job.' },
    targetOf: (params) => ({ kind: 'job', jobId: params.job_pk }),
  },
];

/**
 * `/{api_version}/companies/{company_pk}/users/` and `/{api_version}/jobs/{job_pk}/users/` for each of
 * API_VERSIONS, with or without the trailing slash. Other versions fall through to the app's 404.
 */
export function listingsRouter({ config, knex }: ApiDependencies): Router {
  const router = createRouter<ListingState>({ sensitive: true, strict: false });
  for (const version of config.API_VERSIONS) {
    for (const listing of LISTINGS) {
      router.all(
        `/${version}/${listing.path}`,
        answerListingErrors,
        readOnlyMethods(listing.view),
        requireAppAccess(knex, listing.targetOf),
        listUsers(knex),
      );
    }
  }
  return router;
}
