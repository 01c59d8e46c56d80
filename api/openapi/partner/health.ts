// Filled in by the partner API's health work (issue 58).
export const healthSchemas = {};
export const healthPaths = {};
