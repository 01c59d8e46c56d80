import type { PartnerRoutes } from './routes';

// Filled in by the partner API's test-events work (issue 58).
export const testEventRoutes: PartnerRoutes = () => {};
