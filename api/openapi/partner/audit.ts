// Filled in by the partner API's audit work (issue 58).
export const auditSchemas = {};
export const auditPaths = {};
