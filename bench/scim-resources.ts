import type { ScimResource } from '../api/scim/engine/resource-definition';
import type { PageRequest, ResourceQueries } from '../api/scim/engine/store';
import { groupQueries } from '../api/scim/groups/queries';
import { groupResource } from '../api/scim/groups/resource';
import { userQueries } from '../api/scim/users/queries';
import { userResource } from '../api/scim/users/resource';

/** The SCIM resource types the benchmark measures, by endpoint; the API and the baseline run the same queries. */
export const BENCH_RESOURCES = {
  Groups: { resource: groupResource as ScimResource<unknown, boolean>, queries: groupQueries as ResourceQueries<boolean> },
  Users: { resource: userResource as ScimResource<unknown, boolean>, queries: userQueries as ResourceQueries<boolean> },
} as const;

export type BenchEndpoint = keyof typeof BENCH_RESOURCES;

/** One precompiled list request, as the parent hands it to the baseline process. */
export interface BenchPlan {
  readonly endpoint: BenchEndpoint;
  readonly request: PageRequest<boolean>;
}
