import type { PartnerRoutes } from './routes';

// Filled in by the partner API's audit work (issue 58).
export const auditRoutes: PartnerRoutes = () => {};
