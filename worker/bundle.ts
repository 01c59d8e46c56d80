import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode, type BundleOptions } from '@temporalio/worker';
import { describeError } from '../lib/describe-error';

/** The workflow entry point, as source under tsx or compiled under dist/. */
export const WORKFLOWS_PATH = require.resolve('../workflows');

/**
 * Workflow interceptor modules of a worker with tracing on: they act only on runs started with a trace
 * context. A prebuilt bundle ignores the worker's `interceptors.workflowModules`, so they go into the traced
 * bundle. They double the bundle (OpenTelemetry), and each new workflow run pays for evaluating it, so a
 * worker without tracing runs the plain bundle (BENCHMARKS.md, the floor table).
 */
export const WORKFLOW_INTERCEPTOR_MODULES: readonly string[] = [require.resolve('../workflows/tracing-interceptors')];

/** Where the production build puts the prebuilt workflow bundles: dist/workflow-bundle.js and …-traced.js. */
export const PREBUILT_BUNDLE_PATH = path.join(__dirname, '..', 'workflow-bundle.js');
export const PREBUILT_TRACED_BUNDLE_PATH = path.join(__dirname, '..', 'workflow-bundle-traced.js');

const ignore = () => undefined;
const toStderr = (message: string) => process.stderr.write(`${message}\n`);
/** Webpack's module listing is noise in every build and test run; its warnings and errors are not. */
export const quietBundler = {
  trace: ignore,
  debug: ignore,
  info: ignore,
  log: ignore,
  warn: toStderr,
  error: toStderr,
};

/**
 * Bundles the workflow code (webpack, 0.3 to 0.8 s) so production workers start without bundling; `traced`
 * adds the tracing interceptors.
 */
export async function buildWorkflowBundle(
  outFile: string = PREBUILT_BUNDLE_PATH,
  { traced = false, ...options }: Partial<BundleOptions> & { traced?: boolean } = {},
): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    workflowInterceptorModules: traced ? [...WORKFLOW_INTERCEPTOR_MODULES] : [],
    logger: quietBundler,
    ...options,
  });
  await mkdir(path.dirname(outFile), { recursive: true });
  await writeFile(outFile, code);
  return outFile;
}

// scripts/prepare.js runs `node dist/worker/bundle.js` after compiling: both bundles, beside dist/worker/.
if (require.main === module) {
  Promise.all([
    buildWorkflowBundle(PREBUILT_BUNDLE_PATH),
    buildWorkflowBundle(PREBUILT_TRACED_BUNDLE_PATH, { traced: true }),
  ]).then(
    (files) => process.stdout.write(`workflow bundles written to ${files.join(', ')}\n`),
    (error: unknown) => {
      process.stderr.write(`bundling the workflows failed: ${describeError(error)}\n`);
      process.exitCode = 1;
    },
  );
}
