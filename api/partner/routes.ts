import type Router from '@koa/router';
import type { ApiDependencies } from '../context';
import type { TemporalGateway } from '../../temporal/gateway';
import type { PartnerState } from './app-auth';

/** What a module of partner routes receives: the API's dependencies, with the gateway the partner API needs. */
export interface PartnerRouteDependencies extends ApiDependencies {
  readonly temporalGateway: TemporalGateway;
}

/** Adds one resource's routes to the partner router, below its app check; paths are relative to /partner/v1. */
export type PartnerRoutes = (router: Router<PartnerState>, deps: PartnerRouteDependencies) => void;
