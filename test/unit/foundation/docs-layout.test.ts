import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

// docs/layout.md is the map a newcomer reads first. docs-paths.test.ts fails on a path it names that is gone;
// this file fails on what it leaves out: a top-level folder, a folder of a layer (a capability folder such as
// `store/ordering/`, or an API's folder such as `api/scim/`) and a module that creates a router. Each failure
// names exactly what is missing, so a new folder or router is one line of the page away from passing.

const root = path.resolve(__dirname, '../../..');
const LAYOUT = 'docs/layout.md';

/** Built or local state, absent from a fresh checkout. */
const GENERATED = new Set(['node_modules', 'dist', 'build', '.data', '.temporal', '.prof', '.git', '.ci']);

/** The layers: the top-level folders the production build compiles (tsconfig.build.json's `include`). */
const LAYERS: readonly string[] = (
  JSON.parse(readFileSync(path.join(root, 'tsconfig.build.json'), 'utf8')) as { include: string[] }
).include
  .filter((entry) => !entry.endsWith('.ts'))
  .sort();

const subfolders = (dir: string) =>
  readdirSync(path.join(root, dir), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !GENERATED.has(entry.name) && !entry.name.startsWith('.'))
    .map((entry) => entry.name)
    .sort();

/** Every top-level folder of the repository, generated ones aside. */
const TOP_FOLDERS = subfolders('').map((name) => `${name}/`);

/** The folders of each layer (`application/ordering/`, `api/scim/`, `cli/commands/`), read from disk. */
const LAYER_FOLDERS = LAYERS.flatMap((layer) => subfolders(layer).map((name) => `${layer}/${name}/`));

/** Production TypeScript files of the layers. */
function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return GENERATED.has(entry.name) ? [] : sourceFiles(file);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [file] : [];
  });
}

/** Whether a module's text creates a router: `new Router(…)`, or a call of api/router.ts's `createRouter(…)`. */
export const createsRouter = (text: string) =>
  text
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\*|\/\*)/.test(line) && !/\bfunction\s+createRouter\b/.test(line))
    .some((line) => /\bnew\s+Router\s*[<(]|\bcreateRouter\s*[<(]/.test(line));

/** Every module of the layers that creates a router. */
const ROUTERS = LAYERS.flatMap(sourceFiles)
  .filter((file) => createsRouter(readFileSync(path.join(root, file), 'utf8')))
  .sort();

const layoutText = readFileSync(path.join(root, LAYOUT), 'utf8');

/** The code spans of a piece of markdown, trimmed. */
const codeSpans = (text: string) => [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1].trim());

/** The rows of the page's Folders table, by the folder in their first cell (`api/`). */
function folderRows(text: string): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of text.split('\n')) {
    const cell = /^\|\s*`([\w.-]+\/)`\s*\|/.exec(line);
    if (cell) rows.set(cell[1], line);
  }
  return rows;
}

/** The section under a `## heading`, up to the next heading of that level. */
function section(text: string, heading: string): string {
  const start = text.search(new RegExp(`^## ${heading}\\s*$`, 'm'));
  if (start === -1) return '';
  const rest = text.slice(start).split('\n').slice(1).join('\n');
  const end = rest.search(/^## /m);
  return end === -1 ? rest : rest.slice(0, end);
}

/**
 * What the page leaves out: folders of the layers it does not name (in full anywhere, or as `name/` in its
 * layer's row of the Folders table), top-level folders without a row, and routers whose path the Routers
 * section does not give in full.
 */
export function missingFrom(
  text: string,
  expected: { folders: readonly string[]; layerFolders: readonly string[]; routers: readonly string[] },
): string[] {
  const everywhere = new Set(codeSpans(text));
  const rows = folderRows(text);
  const routerSpans = new Set(codeSpans(section(text, 'Routers')));
  const missing: string[] = [];
  for (const folder of expected.folders) {
    if (!rows.has(folder)) missing.push(`top-level folder ${folder}: no row \`${folder}\` in the Folders table`);
  }
  for (const folder of expected.layerFolders) {
    const [layer, name] = folder.split('/');
    const row = rows.get(`${layer}/`) ?? '';
    if (everywhere.has(folder) || codeSpans(row).some((span) => span === `${name}/`)) continue;
    missing.push(`folder ${folder}: name \`${folder}\`, or \`${name}/\` in the \`${layer}/\` row of the Folders table`);
  }
  for (const router of expected.routers) {
    if (!routerSpans.has(router)) missing.push(`router ${router}: name \`${router}\` in the Routers section`);
  }
  return missing;
}

describe('docs/layout.md', () => {
  it('the scan sees the layers, their folders and the routers', () => {
    for (const layer of ['api', 'application', 'store', 'activities', 'workflows', 'cli'])
      assert.ok(LAYERS.includes(layer), `layer ${layer}/`);
    for (const folder of [
      'application/ordering/',
      'store/partner/',
      'activities/webhooks/',
      'workflows/personal-data/',
      'api/scim/',
      'cli/commands/',
    ]) {
      assert.ok(LAYER_FOLDERS.includes(folder), folder);
    }
    for (const router of [
      'api/router.ts',
      'api/internal/ordering-router.ts',
      'api/scim/engine/router.ts',
      'api/partner-inbox/app.ts',
      'api/health.ts',
    ]) {
      assert.ok(ROUTERS.includes(router), router);
    }
    assert.ok(
      !ROUTERS.includes('api/scim/router.ts'),
      "a module that only returns another module's router creates none",
    );
    assert.ok(!ROUTERS.includes('api/app.ts'), 'mounting routers is not creating one');
  });

  it('names every top-level folder, every folder of a layer and every router', () => {
    const missing = missingFrom(layoutText, { folders: TOP_FOLDERS, layerFolders: LAYER_FOLDERS, routers: ROUTERS });
    assert.deepEqual(missing, [], `${LAYOUT} leaves out:\n  ${missing.join('\n  ')}\n`);
  });

  it("the check names what a page leaves out, and accepts a folder named in its layer's row", () => {
    const page = [
      '## Folders',
      '',
      '| folder | what belongs in it |',
      '|---|---|',
      '| `api/` | `scim/` (SCIM) |',
      '| `store/` | by capability: `store/ordering/` |',
      '',
      '## Routers',
      '',
      '| `api/scim/engine/router.ts` | /scim/v2 |',
      '',
      '## Later',
      '',
      '`api/internal/ordering-router.ts` outside the Routers section does not count.',
    ].join('\n');
    const missing = missingFrom(page, {
      folders: ['api/', 'store/', 'activities/'],
      layerFolders: ['api/scim/', 'store/ordering/', 'store/partner/', 'activities/ordering/'],
      routers: ['api/scim/engine/router.ts', 'api/internal/ordering-router.ts'],
    });
    assert.deepEqual(missing, [
      'top-level folder activities/: no row `activities/` in the Folders table',
      'folder store/partner/: name `store/partner/`, or `partner/` in the `store/` row of the Folders table',
      'folder activities/ordering/: name `activities/ordering/`, or `ordering/` in the `activities/` row of the Folders table',
      'router api/internal/ordering-router.ts: name `api/internal/ordering-router.ts` in the Routers section',
    ]);
  });

  it('the router scan tells creating a router from importing, mentioning or defining the factory', () => {
    assert.equal(createsRouter("  const router = createRouter({ prefix: '/codec' });"), true);
    assert.equal(createsRouter('  return new Router<StateT, ContextT>({ ...options });'), true);
    assert.equal(createsRouter("import { createRouter } from '../router';"), false);
    assert.equal(createsRouter('export function createRouter<StateT>(options = {}): Router<StateT> {'), false);
    assert.equal(createsRouter(' * Built with createRouter() like every other router.'), false);
  });
});

describe('docs/glossary.md', () => {
  const rows = readFileSync(path.join(root, 'docs', 'glossary.md'), 'utf8')
    .split('\n')
    .filter((line) => /^\|/.test(line) && !/^\|\s*(word|-+)\s*\|/.test(line))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );

  it('is linked from the README and docs/layout.md', () => {
    assert.match(readFileSync(path.join(root, 'README.md'), 'utf8'), /\]\(docs\/glossary\.md\)/);
    assert.match(layoutText, /\]\(glossary\.md\)/);
  });

  it('defines each word once, in one sentence, with the one file that owns it', () => {
    assert.ok(rows.length > 50, 'the scan finds the rows');
    const words = rows.map(([word]) => word.toLowerCase());
    assert.deepEqual(
      words.filter((word, index) => words.indexOf(word) !== index),
      [],
      'words defined twice',
    );
    const oneSentence = (meaning: string) => /^[^.]*(\.\S[^.]*)*\.$/.test(meaning.replace(/`[^`]*`/g, 'x'));
    const malformed = rows.filter(
      ([, meaning, owner]) => !oneSentence(meaning) || !/^`[^`]+\.(ts|js)`$/.test(owner ?? ''),
    );
    assert.deepEqual(
      malformed.map(([word]) => word),
      [],
      'rows that are not one sentence and one owner file',
    );
    assert.ok(oneSentence('One POST, at most 4 KiB (0.5 s).') && !oneSentence('One. Two.') && !oneSentence('No stop'));
  });
});
