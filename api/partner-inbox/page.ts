import type { InboxDelivery } from './delivery-ring';

// GET / of the partner inbox: one self-contained page (inline CSS, no script, no external asset), so it works
// offline and its policy can forbid everything else.

export const PAGE_CONTENT_SECURITY_POLICY =
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Every received value is text, never markup: bodies and headers come from whoever POSTs to the inbox. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

/** The body indented when it is JSON, else as received. */
function prettyBody(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

const verdict = (name: string, result: string) =>
  `<span class="check ` +
  `${result === 'valid' ? 'ok' : result === 'not signed' ? 'none' : 'bad'}">${escapeHtml(name)}: ` +
  `${escapeHtml(result)}</span>`;

function deliverySection(delivery: InboxDelivery): string {
  const event =
    delivery.event_type && delivery.action ? `${delivery.event_type}/${delivery.action}` : 'not a webhook envelope';
  const headers = Object.entries(delivery.headers)
    .map(([name, value]) => `<tr><th>${escapeHtml(name)}</th><td>${escapeHtml(value)}</td></tr>`)
    .join('');
  return (
    `<section>
<h2>${escapeHtml(event)} <small>${escapeHtml(delivery.received_at)}</small></h2>
<p>webhook-id <code>${escapeHtml(delivery.webhook_id ?? 'none')}</code> ` +
    `${verdict('authorization', delivery.checks.authorization)} ${verdict('signature', delivery.checks.signature)}</p>
<details><summary>headers</summary><table>${headers}</table></details>
<pre>${escapeHtml(prettyBody(delivery.body))}</pre>
</section>`
  );
}

/** The inbox page: the last deliveries, newest first. */
export function inboxPage(deliveries: readonly InboxDelivery[]): string {
  const list = deliveries.length
    ? deliveries.map(deliverySection).join('\n')
    : '<p>No delivery yet. Send one: <code>npx partner-service webhooks send ' +
      'examples/events/job-new.json</code>, then reload.</p>';
  return (
    `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Partner inbox</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem auto; max-width: 60rem; padding: 0 1rem; color: #222; }
code, pre, td, th { font-family: ui-monospace, monospace; font-size: 13px; }
section { border-top: 1px solid #ccc; padding: .5rem 0; }
h2 small { font-weight: normal; color: #666; font-size: 13px; }
pre { background: #f6f6f6; padding: .75rem; overflow: auto; max-height: 24rem; }
table { border-collapse: collapse; } th { text-align: left; padding-right: 1rem; vertical-align: top; } ` +
    `td { word-break: break-all; }
.check { padding: 0 .4rem; border-radius: 3px; margin-left: .5rem; }
.ok { background: #d9f2dd; } .bad { background: #f8d7d7; } .none { background: #eee; }
</style>
</head>
<body>
<h1>Partner inbox</h1>
<p>A loopback receiver that <code>partner-service start</code> runs as the partner endpoint ` +
    `(<code>POST /webhooks</code>)
when none of <code>DATABASE_URL</code>, Temporal and <code>PARTNER_ENDPOINT</code> is configured. It answers every
delivery with 204 and keeps the last ones in memory, newest first (reload for new ones); JSON at
<a href="/deliveries">/deliveries</a>. To deliver to a real partner, set <code>PARTNER_ENDPOINT</code> and
<code>PARTNER_ACCESS_TOKEN</code>.</p>
${list}
</body>
</html>
`
  );
}
