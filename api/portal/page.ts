// The portal's one page: a shell that its script (portal/main.ts) fills. Scripts and styles come from the service
// only, and none inline, so the policy needs no 'unsafe-inline'; the page works offline.

export const PORTAL_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const PORTAL_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Partner portal</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/portal/assets/portal.css">
<script type="module" src="/portal/assets/main.js"></script>
</head>
<body>
<header>
<h1>Partner portal</h1>
<nav id="nav" aria-label="Portal"></nav>
<p id="who"></p>
<button type="button" id="sign-out" hidden>Sign out</button>
</header>
<main id="view" tabindex="-1"><p>Loading…</p></main>
<div id="status" role="status" aria-live="polite" class="visually-hidden"></div>
<noscript><p>The partner portal needs JavaScript.</p></noscript>
</body>
</html>
`;
