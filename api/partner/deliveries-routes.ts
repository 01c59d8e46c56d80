import type { PartnerRoutes } from './routes';

// Filled in by the partner API's deliveries work (issue 58).
export const deliveryRoutes: PartnerRoutes = () => {};
