import { readFileSync } from 'node:fs';
import path from 'node:path';
import type Router from '@koa/router';
import { createRouter } from '../router';
import { answerFile, answerPage } from '../static-files';
import type { ApiDependencies } from '../context';

// GET /docs: the partners' API reference, rendered in the browser by Swagger UI (it renders OpenAPI 3.1
// `webhooks`) from /openapi.json. Every asset comes from the service itself, so the page works offline.

const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** The only files served from the package; anything else under /docs/assets answers 404. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

// Scripts only from the service; Swagger UI sets style attributes, hence 'unsafe-inline' for styles only.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Partner Integration Service: API reference</title>
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/reference.js"></script>
</body>
</html>
`;

// An external script rather than an inline one, so the policy needs no 'unsafe-inline' for scripts.
const START =
  `SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true, docExpansion: 'list', ` +
  `defaultModelsExpandDepth: 0 });\n`;

export function docsRouter(_deps: ApiDependencies): Router {
  const files = new Map(
    Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(path.join(SWAGGER_UI_DIR, name)) }]),
  );
  files.set('reference.js', { type: 'application/javascript; charset=utf-8', body: Buffer.from(START) });
  const router = createRouter();
  router.get('/docs', function referencePage(ctx) {
    answerPage(ctx, CONTENT_SECURITY_POLICY, PAGE);
  });
  router.get('/docs/assets/:file', function referenceAsset(ctx) {
    answerFile(ctx, files, 'public, max-age=3600');
  });
  return router;
}
