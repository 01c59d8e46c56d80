// Filled in by the partner API's recoveries work (issue 58).
export const recoverySchemas = {};
export const recoveryPaths = {};
