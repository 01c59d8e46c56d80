import type { PartnerRoutes } from './routes';

// Filled in by the partner API's health work (issue 58).
export const healthRoutes: PartnerRoutes = () => {};
