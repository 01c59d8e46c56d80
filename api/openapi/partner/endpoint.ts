// Filled in by the partner API's endpoint work (issue 58).
export const endpointSchemas = {};
export const endpointPaths = {};
