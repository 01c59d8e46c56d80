// Filled in by the partner API's test-events work (issue 58).
export const testEventSchemas = {};
export const testEventPaths = {};
