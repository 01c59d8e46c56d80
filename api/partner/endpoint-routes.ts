import type { PartnerRoutes } from './routes';

// Filled in by the partner API's endpoint work (issue 58).
export const endpointRoutes: PartnerRoutes = () => {};
