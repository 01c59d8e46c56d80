// Filled in by the partner API's deliveries work (issue 58).
export const deliverySchemas = {};
export const deliveryPaths = {};
