import type { PartnerRoutes } from './routes';

// Filled in by the partner API's recoveries work (issue 58).
export const recoveryRoutes: PartnerRoutes = () => {};
