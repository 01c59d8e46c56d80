import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../../..');

/** The pages that name repository paths: the README, CONTRIBUTING, every page of docs/ and the benchmarks. */
const PAGES = [
  'README.md',
  'CONTRIBUTING.md',
  'BENCHMARKS.md',
  ...readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** Built or local state, absent from a fresh checkout: a path under them is not checked. */
const GENERATED = new Set(['node_modules', 'dist', 'build', '.data', '.temporal', '.prof', '.git']);

/** Top-level folders of the repository, read from disk: a token that starts with one is a repository path. */
const TOP_FOLDERS = new Set(
  readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !GENERATED.has(entry.name))
    .map((entry) => entry.name),
);

/** Files at the root: a bare `package.json` or `BENCHMARKS.md` names one of these. */
const ROOT_FILES = new Set(
  readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => entry.name),
);

/** Media types and protocol names that look like paths under a top-level folder (`application/json`). */
const NOT_PATHS = /^(application|text|image|multipart)\/[a-z0-9.+-]+$/i;

/** Extensions of the files the docs name; a slashed token ending in one is a path even when its folder is gone. */
const FILE_EXTENSION = /\.(ts|js|mjs|cjs|json|sh|sql|md|yml|yaml|toml|png|conf|txt|csv|proto)$/;

/**
 * Every file and folder of the repository (folders with a trailing '/'): a token that does not start at the root,
 * such as `engine/router.ts` in the SCIM code map or `current/` under the captured histories, names one of these
 * relative to the text around it.
 */
function repositoryPaths(dir = '', paths: string[] = []): string[] {
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    if (GENERATED.has(entry.name)) continue;
    const relative = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      paths.push(`${relative}/`);
      repositoryPaths(relative, paths);
    } else paths.push(relative);
  }
  return paths;
}
const REPOSITORY_PATHS = repositoryPaths();

interface Mention {
  readonly page: string;
  readonly line: number;
  readonly token: string;
}

/** A token trimmed of the quoting and punctuation around it, and of a `:line` suffix. */
const clean = (token: string) =>
  token
    .replace(/^[@'"(<[]+/, '')
    .replace(/[)'"\]>,;.:]+$/, '')
    .replace(/:\d+(-\d+)?$/, '');

/**
 * Whether a token names a repository path: it starts with a top-level folder (or is a root file), or it has a
 * folder and a file extension (`client/ingest.ts` after client/ was renamed). URLs, API paths (`/internal/v1/…`),
 * media types and placeholders are not paths.
 */
function isRepoPath(token: string, inCode: boolean): boolean {
  if (!token || /:\/\/|^\/|^~|^\$|^-|[\s=?]/.test(token) || NOT_PATHS.test(token)) return false;
  const [first, ...rest] = token.split('/');
  if (GENERATED.has(first)) return false;
  if (rest.length === 0) return ROOT_FILES.has(first) || (inCode && /^[A-Z][A-Z_-]*\.md$/.test(first));
  if (TOP_FOLDERS.has(first)) return true;
  // A folder name alone (`current/`, `groups/`) is relative to its sentence; a bare name that is no folder anywhere is checked.
  if (rest.length === 1 && rest[0] === '') return inCode && /^[a-z][a-z0-9_-]*$/.test(first);
  return inCode && /^[a-z][\w.-]*$/.test(first) && FILE_EXTENSION.test(token);
}

/** Every repository path a page names: in code spans and fenced blocks (word by word), and file-like prose. */
function mentionsIn(page: string): Mention[] {
  const mentions: Mention[] = [];
  let fenced = false;
  readFileSync(path.join(root, page), 'utf8')
    .split('\n')
    .forEach((text, index) => {
      const line = index + 1;
      if (/^\s*```/.test(text)) {
        fenced = !fenced;
        return;
      }
      const add = (raw: string, inCode: boolean) => {
        const token = clean(raw);
        if (isRepoPath(token, inCode)) mentions.push({ page, line, token });
      };
      if (fenced) {
        text.split(/\s+/).forEach((word) => add(word, true));
        return;
      }
      const withoutLinks = text.replace(/\]\([^)]*\)/g, ']');
      for (const [, code] of withoutLinks.matchAll(/`([^`]+)`/g)) code.split(/\s+/).forEach((word) => add(word, true));
      const prose = withoutLinks.replace(/`[^`]*`/g, ' ');
      for (const [word] of prose.matchAll(/[\w.@/-]+\/[\w.-]+\.[a-z]+|\b[A-Z][A-Z_-]*\.md\b/g)) add(word, false);
    });
  return mentions;
}

/** Every TypeScript file of the repository (generated folders aside), relative to the root. */
const TS_FILES = REPOSITORY_PATHS.filter((file) => file.endsWith('.ts'));

/** The names the repository's TypeScript declares: functions, classes, types, interfaces, constants and variables. */
const DECLARED = new Set(
  TS_FILES.flatMap((file) =>
    [
      ...readFileSync(path.join(root, file), 'utf8').matchAll(
        /\b(?:function\*?|class|interface|type|enum|const|let)\s+([A-Za-z_]\w*)/g,
      ),
    ].map((m) => m[1]),
  ),
);

/** The environment variables (docs/configuration.md's rows): settings, not symbols, wherever a test names one. */
const VARIABLES = new Set(
  [...readFileSync(path.join(root, 'docs', 'configuration.md'), 'utf8').matchAll(/^\| `([A-Z][A-Z0-9_]+)`/gm)].map(
    (m) => m[1],
  ),
);

/** A code span that names a symbol: an identifier with an inner capital (`recordRun`, `TemporalGateway`) or a constant (`MAX_ATTEMPTS`). */
const SYMBOL = /^(?:[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*|[A-Z][A-Z0-9]*_[A-Z0-9_]+)(?:\(\))?$/;

/**
 * Each paragraph or table row of a page that cites TypeScript files, with the symbols it names in code spans
 * that the repository declares (environment variables, SQL names and CLI flags are not declared, so not checked).
 */
function symbolCitations(
  page: string,
): { readonly line: number; readonly files: string[]; readonly symbols: string[] }[] {
  const blocks: { line: number; text: string }[] = [];
  let fenced = false;
  let current: { line: number; text: string } | undefined;
  readFileSync(path.join(root, page), 'utf8')
    .split('\n')
    .forEach((text, index) => {
      if (/^\s*```/.test(text)) fenced = !fenced;
      if (fenced || /^\s*```/.test(text) || text.trim() === '' || text.startsWith('|') || /^#/.test(text)) {
        current = undefined;
        if (text.startsWith('|')) blocks.push({ line: index + 1, text });
        return;
      }
      if (/^\s*[-*\d]/.test(text) || !current) blocks.push((current = { line: index + 1, text }));
      else current.text += ` ${text}`;
    });
  return blocks.flatMap(({ line, text }) => {
    const spans = [...text.replace(/\]\([^)]*\)/g, ']').matchAll(/`([^`]+)`/g)].map((m) => m[1].trim());
    const files = spans.map(clean).filter((span) => span.endsWith('.ts') && isRepoPath(span, true) && exists(span));
    const symbols = spans
      .map((span) => span.replace(/\(\)$/, ''))
      .filter((span) => SYMBOL.test(span) && DECLARED.has(span) && !VARIABLES.has(span));
    return files.length && symbols.length ? [{ line, files, symbols }] : [];
  });
}

/** The file a path names, as exists() finds it: from the root, or relative to its folder. */
const fileOf = (token: string) =>
  existsSync(path.join(root, token)) ? token : TS_FILES.find((known) => `/${known}`.endsWith(`/${token}`))!;

/** The top-level folders of test/ that hold tests. */
const TEST_FOLDERS = [
  ...new Set(
    REPOSITORY_PATHS.filter((file) => file.startsWith('test/') && file.endsWith('.test.ts')).map(
      (file) => `test/${file.split('/')[1]}/`,
    ),
  ),
].sort();

/** Where a markdown link on a page points, relative to that page; external links and pure anchors are left out. */
function linksIn(page: string): (Mention & { readonly anchor: string | undefined })[] {
  const links: (Mention & { readonly anchor: string | undefined })[] = [];
  readFileSync(path.join(root, page), 'utf8')
    .split('\n')
    .forEach((text, index) => {
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target) || target.startsWith('#')) continue;
        const [file, anchor] = target.split('#');
        links.push({
          page,
          line: index + 1,
          token: path.posix.normalize(path.posix.join(path.posix.dirname(page), file)),
          anchor,
        });
      }
    });
  return links;
}

/** Whether a path exists; one with a glob or a placeholder (`*`, `{…}`, `<…>`, `…`) needs only its fixed folders. */
function exists(token: string): boolean {
  const segments = token.replace(/\/$/, '').split('/');
  const fixed = segments.findIndex((segment) => /[*{}<>…]/.test(segment));
  const checked = fixed === -1 ? segments : segments.slice(0, fixed);
  if (!TOP_FOLDERS.has(checked[0]) && !ROOT_FILES.has(checked[0])) {
    const suffix = `/${checked.join('/')}${fixed !== -1 || token.endsWith('/') ? '/' : ''}`;
    return REPOSITORY_PATHS.some((known) => `/${known}`.endsWith(suffix));
  }
  const target = path.join(root, ...checked);
  if (!existsSync(target)) return false;
  return !token.endsWith('/') || fixed !== -1 || statSync(target).isDirectory();
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

function anchorsOf(page: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const text of readFileSync(path.join(root, page), 'utf8').split('\n')) {
    if (/^\s*```/.test(text)) fenced = !fenced;
    // An explicit anchor keeps an old link working where a heading was renamed.
    for (const [, id] of text.matchAll(/<a (?:id|name)="([^"]+)"><\/a>/g)) anchors.add(id);
    const heading = !fenced && /^#{1,6}\s+(.*)$/.exec(text);
    if (!heading) continue;
    const base = slug(heading[1]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count ? `${base}-${count}` : base);
  }
  return anchors;
}

const where = (mention: Mention) => `${mention.page}:${mention.line} ${mention.token}`;

describe('the docs', () => {
  it('name only repository paths that exist', () => {
    const mentions = PAGES.flatMap(mentionsIn);
    // The scan itself: paths every page set names in the three forms it reads.
    for (const known of [
      'store/partner/partner-gate.ts',
      'test/foundation/module-boundaries.test.ts',
      'scripts/install-temporal.sh',
      'application/',
    ]) {
      assert.ok(
        mentions.some((mention) => mention.token === known),
        `the scan finds ${known}`,
      );
    }
    assert.deepEqual(mentions.filter((mention) => !exists(mention.token)).map(where), []);
  });

  it('name symbols in code spans that the files they cite beside them hold', () => {
    const citations = PAGES.flatMap((page) => symbolCitations(page).map((citation) => ({ page, ...citation })));
    assert.ok(citations.length > 10, 'the scan finds cited symbols');
    const wrong = citations.flatMap(({ page, line, files, symbols }) => {
      const texts = files.map((file) => readFileSync(path.join(root, fileOf(file)), 'utf8'));
      return symbols
        .filter((symbol) => !texts.some((text) => new RegExp(`\\b${symbol}\\b`).test(text)))
        .map((symbol) => `${page}:${line} ${symbol} is in none of ${files.join(', ')}`);
    });
    assert.deepEqual(wrong, []);
  });

  it("testing.md's table of folders names exactly the folders of test/ that hold tests", () => {
    const rows = readFileSync(path.join(root, 'docs', 'testing.md'), 'utf8')
      .split('\n')
      .filter((line) => /^\| `test\/[\w-]+\/`/.test(line));
    const named = rows.flatMap((row) => [...row.split('|')[1].matchAll(/`(test\/[\w-]+\/)`/g)].map((m) => m[1])).sort();
    assert.ok(TEST_FOLDERS.includes('test/access/'), 'the probe sees test/access/');
    assert.deepEqual(named, TEST_FOLDERS);
  });

  it('link only to files and headings that exist', () => {
    const links = PAGES.flatMap(linksIn);
    assert.ok(links.length > 20, 'the scan finds the links');
    const broken = links.filter((link) => {
      if (!existsSync(path.join(root, link.token))) return true;
      return link.anchor !== undefined && link.token.endsWith('.md') && !anchorsOf(link.token).has(link.anchor);
    });
    assert.deepEqual(
      broken.map((link) => `${where(link)}${link.anchor ? `#${link.anchor}` : ''}`),
      [],
    );
  });

  it('the path check tells repository paths from URLs, API paths and media types, and sees a renamed folder', () => {
    assert.equal(isRepoPath('store/webhook-store.ts', true), true);
    assert.equal(isRepoPath('db/migrations/014_partner_gate.ts', false), true);
    assert.equal(isRepoPath('client/', true), true);
    assert.equal(isRepoPath('client/ingest.ts', true), true);
    assert.equal(exists('client/'), false);
    assert.equal(exists('client/ingest.ts'), false);
    assert.equal(exists('api/scim/'), true);
    assert.equal(exists('test/fixtures/events/*.json'), true);
    assert.equal(exists('engine/filter/parser.ts'), true, 'a path relative to its folder');
    assert.equal(exists('current/'), true, 'a folder relative to the text');
    assert.equal(exists('engine/filter/missing.ts'), false);
    for (const notPath of [
      '/internal/v1/webhooks',
      'http://127.0.0.1:3000/docs',
      'application/json',
      'json/plain',
      'DATA_DIR/postgres',
      'partner-webhooks:b1',
    ]) {
      assert.equal(isRepoPath(clean(notPath), true), false, notPath);
    }
  });
});

/** The pages people read as the present state of the service: the README and every page of docs/ (BENCHMARKS.md is a record of runs). */
const PROSE_PAGES = PAGES.filter((page) => page !== 'BENCHMARKS.md');

/** A page's prose lines: fenced blocks and code spans are left out, so SQL's `now()` or a command's comment is not prose. */
function proseLines(page: string): { readonly line: number; readonly text: string }[] {
  let fenced = false;
  return readFileSync(path.join(root, page), 'utf8')
    .split('\n')
    .flatMap((text, index) => {
      if (/^\s*```/.test(text)) {
        fenced = !fenced;
        return [];
      }
      return fenced ? [] : [{ line: index + 1, text: text.replace(/`[^`]*`/g, ' ') }];
    });
}

/** Issue references: they date a page and mean nothing to its reader. */
const ISSUE_REFERENCE = /\bissues?\s+#?\d+|#\d+\b/i;

/**
 * Changelog phrasing: words that describe a change rather than the service. Normal English stays allowed ("the
 * old build", "was accepted", "any more" in "kept any more"); `now` is banned whole, since "at once" or
 * "currently" says the same without dating the page.
 */
const CHANGELOG =
  /(?<![-\w])(now|no longer|used to|previously|formerly|was changed|were changed|we replaced|replaced by|earlier versions?|until recently)\b/i;

const hits = (pattern: RegExp) =>
  PROSE_PAGES.flatMap((page) =>
    proseLines(page).flatMap(({ line, text }) => (pattern.test(text) ? [`${page}:${line} ${text.trim()}`] : [])),
  );

describe('the docs read as the present', () => {
  it('cover the README and every page of docs/, decisions.md included', () => {
    assert.ok(
      PROSE_PAGES.includes('README.md') &&
        PROSE_PAGES.includes('docs/decisions.md') &&
        PROSE_PAGES.includes('docs/partners.md'),
    );
  });

  it('name no issue numbers', () => {
    assert.deepEqual(hits(ISSUE_REFERENCE), []);
  });

  it('read as the service, not as a changelog', () => {
    assert.deepEqual(hits(CHANGELOG), []);
  });

  it('the changelog check catches change phrasing in prose and leaves code and plain English alone', () => {
    for (const changelog of [
      'The worker now retries.',
      'Now the API answers 409.',
      'It no longer reads the file.',
      'This used to be 400.',
      'previously a 500',
      'was changed to 404',
      'replaced by a view',
      'as in earlier versions',
    ]) {
      assert.ok(CHANGELOG.test(changelog), changelog);
    }
    for (const plain of [
      'the old build drains',
      'the event was accepted',
      'no history that needs it is kept any more',
      'known-now',
      'nowhere',
      'snow',
    ]) {
      assert.ok(!CHANGELOG.test(plain), plain);
    }
  });
});
