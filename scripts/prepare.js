#!/usr/bin/env node
// Build step run by `npm ci` (prepare), `npm run build` and `npm test`: compile the service alone
// (tsconfig.build.json: no bench/ or test/) to dist/, then bundle the workflow code ahead of time so the worker
// does not run webpack at start-up. Benchmarks build apart into build/ (npm run bench); tests run under tsx.
const { execFileSync } = require('node:child_process');
const { copyFileSync, existsSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
  cwd: root,
});

// The partner portal's browser code (portal/, its own tsconfig with the DOM) to dist/portal-assets, with its CSS.
execFileSync(
  process.execPath,
  [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'portal', 'tsconfig.json')],
  {
    stdio: 'inherit',
    cwd: root,
  },
);
copyFileSync(path.join(root, 'portal', 'portal.css'), path.join(root, 'dist', 'portal-assets', 'portal.css'));

const bundler = path.join(root, 'dist', 'worker', 'bundle.js');
if (existsSync(bundler)) {
  // Only the bundler's own failures reach the terminal; its progress line is noise in every test run.
  execFileSync(process.execPath, [bundler], { stdio: ['ignore', 'ignore', 'inherit'], cwd: root });
}
