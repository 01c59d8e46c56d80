// Filled in by the partner API's signing-secrets work (issue 58).
export const signingSecretSchemas = {};
export const signingSecretPaths = {};
