import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');

/** The modules a fresh Node.js process has loaded after requiring `entry` (TypeScript through tsx). */
function modulesLoadedBy(entry: string): string[] {
  const script = `require(${JSON.stringify(path.join(root, entry))}); process.stdout.write(JSON.stringify(Object.keys(require.cache)))`;
  return JSON.parse(
    execFileSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], { cwd: root, encoding: 'utf8' }),
  );
}

/** Top-level folders that hold no production source: tests, benches, dependencies, builds and local state. */
const NOT_SOURCE = new Set(['test', 'bench', 'node_modules', 'dist', '.git', '.temporal', '.data', 'examples', 'docs']);

/** Production TypeScript files, found on disk so that a copy without .git (a tarball, a Docker context) works. */
function sourceFiles(dir = ''): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory())
      return (dir === '' && NOT_SOURCE.has(entry.name)) || entry.name === 'node_modules' ? [] : sourceFiles(file);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [file] : [];
  });
}

/** Production source files, with the relative modules each imports (`import … from`, `import(…)`). */
function importGraph(): Map<string, string[]> {
  const files = sourceFiles();
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(path.join(root, file), 'utf8');
    const specifiers = [...text.matchAll(/(?:from|import\()\s*'(\.[^']+)'/g)].map((m) =>
      path.normalize(path.join(path.dirname(file), m[1])),
    );
    graph.set(file, specifiers);
  }
  return graph;
}

const folderOf = (file: string) => file.split(path.sep)[0];

/** The import graph without type-only imports (erased by the compiler), and with `require('./…')`: what loads what. */
function runtimeImportGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles()) {
    const text = readFileSync(path.join(root, file), 'utf8').replace(/^(import|export) type [^;]+;/gm, '');
    const specifiers = [...text.matchAll(/(?:from|import\(|require\()\s*'(\.[^']+)'/g)].map((m) =>
      path.normalize(path.join(path.dirname(file), m[1])),
    );
    graph.set(
      file,
      specifiers.map((s) =>
        graph.has(`${s}.ts`) || sourceFiles().includes(`${s}.ts`) ? `${s}.ts` : path.join(s, 'index.ts'),
      ),
    );
  }
  return graph;
}

/** The import graph with type-only imports, each import resolved to its file. */
function resolvedImportGraph(): Map<string, string[]> {
  const files = new Set(sourceFiles());
  const resolve = (target: string) => (files.has(`${target}.ts`) ? `${target}.ts` : path.join(target, 'index.ts'));
  return new Map([...importGraph()].map(([file, imports]) => [file, imports.map(resolve)]));
}

/** The capabilities, each with one folder of the same name in every layer of CAPABILITY_LAYERS that has its code (docs/layout.md). */
const CAPABILITIES = ['ingestion', 'webhooks', 'ordering', 'partner', 'personal-data', 'access'] as const;
/** The layers whose files serve several capabilities; api/ is by API, cli/ by command, lib/ is what all share. */
const CAPABILITY_LAYERS = ['application', 'store', 'activities', 'workflows'];
/** The files of those layers that belong to none: the workflow bundle's entry, every workflow's inputs and results, its tracing. */
const LAYER_WIDE = [
  path.join('workflows', 'index.ts'),
  path.join('workflows', 'types.ts'),
  path.join('workflows', 'tracing-interceptors.ts'),
];

/** The delivery model and partner protection's states: what every layer above shares. */
const DOMAIN_MODULES = [path.join('lib', 'delivery.ts'), path.join('lib', 'partner-states.ts')];

/** Every cycle of the graph, each once, as the files along it. */
function cycles(graph: Map<string, string[]>): string[][] {
  const found = new Map<string, string[]>();
  const visit = (file: string, trail: string[]) => {
    const at = trail.indexOf(file);
    if (at >= 0) {
      const cycle = trail.slice(at);
      found.set([...cycle].sort().join(' '), cycle);
      return;
    }
    if (trail.length > 40) return;
    for (const next of graph.get(file) ?? []) visit(next, [...trail, file]);
  };
  for (const file of graph.keys()) visit(file, []);
  return [...found.values()];
}

/** The TypeScript files of bench/, relative to the root. */
function benchFiles(dir = 'bench'): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    return entry.isDirectory() ? benchFiles(file) : entry.name.endsWith('.ts') ? [file] : [];
  });
}

/** bench/ is a harness that measures the service through its public surface, and stays small. */
const BENCH_MAX_LINES = 6_450;

describe('module boundaries', function () {
  this.timeout(60_000);

  for (const entry of ['api/app.ts', 'cli/main.ts', 'index.ts']) {
    it(`loading ${entry} does not load @temporalio/worker or its native core bridge`, () => {
      const loaded = modulesLoadedBy(entry);
      assert.ok(
        loaded.some((m) => m.includes(`${path.sep}@temporalio${path.sep}client${path.sep}`)),
        'the probe sees the client it loads',
      );
      assert.deepEqual(
        loaded.filter((m) => /@temporalio[\\/](worker|core-bridge)[\\/]/.test(m)),
        [],
      );
    });
  }

  it('only the worker and the CLI commands that run it import worker/; activities/ only the worker; partner-client/ only activities/, the worker and send-test; workflows/ takes only types from activities/', () => {
    const importers = (folder: string) =>
      [...importGraph()]
        .filter(([file, imports]) => folderOf(file) !== folder && imports.some((target) => folderOf(target) === folder))
        .map(([file]) => file)
        .sort();
    assert.deepEqual(importers('worker'), ['cli/commands/start.ts', 'cli/commands/worker.ts']);
    assert.deepEqual(
      importers('activities').filter((file) => folderOf(file) !== 'workflows'),
      ['worker/worker-options.ts'],
    );
    assert.deepEqual(
      importers('partner-client').filter((file) => folderOf(file) !== 'activities'),
      ['cli/send-test.ts', 'worker/background-loops.ts'],
    );
    // The API and the CLI reach webhook rows only through application/ (send-test records its one attempt itself);
    // the worker reads its gauges and the namespace's retention from store/ itself.
    assert.deepEqual(
      importers('store').filter((file) => !['application', 'activities', 'worker', 'bench'].includes(folderOf(file))),
      ['cli/send-test.ts'],
    );
    for (const file of importers('activities').filter((f) => folderOf(f) === 'workflows')) {
      const text = readFileSync(path.join(root, file), 'utf8');
      assert.doesNotMatch(
        text,
        /^import (?!type )[^;]*'(\.\.\/)+activities/m,
        `${file} takes only types from activities/`,
      );
    }
  });

  it('each layer that serves several capabilities holds them in one folder per capability, named alike in every layer', () => {
    const byLayer = new Map(
      CAPABILITY_LAYERS.map((layer) => [layer, sourceFiles().filter((file) => folderOf(file) === layer)]),
    );
    for (const [layer, files] of byLayer) {
      assert.ok(files.length > 0, `the probe sees ${layer}/`);
      const outside = files.filter((file) => {
        const [, capability, ...rest] = file.split(path.sep);
        return rest.length === 0
          ? !LAYER_WIDE.includes(file)
          : !(CAPABILITIES as readonly string[]).includes(capability);
      });
      assert.deepEqual(
        outside,
        [],
        `${layer}/: every file in a capability folder (${CAPABILITIES.join(', ')}), or one of the layer-wide files`,
      );
    }
    // Each capability appears in the layers it needs, under its one name: a stray folder fails above, a missing one here.
    const present = (capability: string) =>
      CAPABILITY_LAYERS.filter((layer) => byLayer.get(layer)!.some((file) => file.split(path.sep)[1] === capability));
    assert.deepEqual(Object.fromEntries(CAPABILITIES.map((capability) => [capability, present(capability)])), {
      ingestion: ['application', 'store'],
      webhooks: ['application', 'store', 'activities', 'workflows'],
      ordering: ['application', 'store', 'activities'],
      partner: ['application', 'store', 'activities'],
      'personal-data': ['application', 'store', 'activities', 'workflows'],
      access: ['application', 'store'],
    });
  });

  it('temporal/ (the client and what the worker shares) imports nothing of the layers that use it', () => {
    const upward = [...importGraph()]
      .filter(([file]) => folderOf(file) === 'temporal')
      .flatMap(([file, imports]) =>
        imports
          .filter((target) =>
            ['api', 'cli', 'application', 'store', 'activities', 'worker', 'partner-client'].includes(folderOf(target)),
          )
          .map((target) => `${file} imports ${target}`),
      );
    assert.deepEqual(upward, []);
  });

  it('no production modules load each other in a cycle (type-only imports aside)', () => {
    assert.deepEqual(cycles(runtimeImportGraph()), []);
  });

  it('webhook data flows one way: store/, activities/ and partner-client/ import nothing (not even types) of the folders above them', () => {
    const above: Record<string, string[]> = {
      store: ['api', 'application', 'workflows', 'activities', 'partner-client', 'worker', 'cli'],
      activities: ['api', 'application', 'workflows', 'worker', 'cli'],
      'partner-client': ['api', 'application', 'workflows', 'activities', 'store', 'worker', 'cli'],
    };
    const upward = [...importGraph()].flatMap(([file, imports]) =>
      imports
        .filter((target) => above[folderOf(file)]?.includes(folderOf(target)))
        .map((target) => `${file} imports ${target}`),
    );
    assert.ok(importGraph().has(path.join('store', 'webhooks', 'attempt-claim.ts')), 'the probe sees store/');
    assert.deepEqual(upward, []);
  });

  it('the domain model (lib/delivery.ts, lib/partner-states.ts) sits at the bottom: it imports only lib/ and events/', () => {
    const graph = importGraph();
    for (const file of DOMAIN_MODULES) {
      const imports = graph.get(file);
      assert.ok(imports, `the probe sees ${file}`);
      assert.deepEqual(
        imports.filter((target) => !['lib', 'events'].includes(folderOf(target))),
        [],
        `${file} imports only lib/ and events/`,
      );
    }
    // events/ is beside the model, never above it: it imports only lib/, and nothing of the model's imports loops back.
    const fromEvents = [...graph]
      .filter(([file]) => folderOf(file) === 'events')
      .flatMap(([, imports]) => imports.filter((target) => !['lib', 'events'].includes(folderOf(target))));
    assert.deepEqual(fromEvents, []);
  });

  it('no modules of application/, workflows/, activities/, partner-client/, store/ or lib/ import each other in a cycle, type-only imports included', () => {
    const layers = ['application', 'workflows', 'activities', 'partner-client', 'store', 'lib'];
    const graph = new Map([...resolvedImportGraph()].filter(([file]) => layers.includes(folderOf(file))));
    assert.ok(graph.has(path.join('application', 'ingestion', 'start-webhook.ts')), 'the probe sees application/');
    assert.deepEqual(cycles(graph), []);
  });

  it("only store/ creates a partner gate row: ensureGate is store/'s own", () => {
    const callers = sourceFiles().filter(
      (file) => folderOf(file) !== 'store' && /\bensureGate\b/.test(readFileSync(path.join(root, file), 'utf8')),
    );
    assert.deepEqual(callers, []);
  });

  it('bench/ imports nothing from test/, and its TypeScript stays within 6,450 lines', () => {
    const files = benchFiles();
    assert.ok(files.length > 0, 'the probe finds bench/');
    const fromTest = files.flatMap((file) => {
      const text = readFileSync(path.join(root, file), 'utf8');
      const specifiers = [...text.matchAll(/(?:from|import\(|require(?:\.resolve)?\()\s*'([^']+)'/g)].map((m) => m[1]);
      return specifiers
        .filter(
          (specifier) =>
            specifier.startsWith('.') &&
            folderOf(path.relative(root, path.resolve(root, path.dirname(file), specifier))) === 'test',
        )
        .map((specifier) => `${file} imports ${specifier}`);
    });
    assert.deepEqual(fromTest, []);
    const lines = files.reduce(
      (sum, file) => sum + readFileSync(path.join(root, file), 'utf8').split('\n').length - 1,
      0,
    );
    assert.ok(lines <= BENCH_MAX_LINES, `bench/ has ${lines} lines of TypeScript, more than ${BENCH_MAX_LINES}`);
  });
});
