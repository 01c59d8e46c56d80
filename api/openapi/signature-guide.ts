/** The receiver's guide to the signature, shown in the reference page (Markdown in info.description). */
export const SIGNATURE_GUIDE =
  `## Verifying a webhook

Every delivery carries \`Authorization: Bearer <token>\` (the token agreed with the service), ` +
  `\`webhook-id\` and \`webhook-timestamp\`.
When signing is on, ` +
  `\`webhook-signature\` holds one or more space-separated \`v1,<signature>\` entries (Standard Webhooks):

1. Take the raw request body, exactly as received (do not re-serialise the JSON).
2. Build \`{webhook-id}.{webhook-timestamp}.{body}\`.
3. Compute HMAC-SHA256 of it with the shared secret and encode it in base64.
4. Accept when it equals any \`v1,\` entry (there are two while a secret is being rotated), comparing in constant time,
   and when \`webhook-timestamp\` (Unix seconds) is within a few minutes of your clock.
5. De-duplicate on \`webhook-id\`: it is the same on every retry and on a redelivery.

Answer any 2XX status to acknowledge; anything else, a timeout or a network error is retried.`;
