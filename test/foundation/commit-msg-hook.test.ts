import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// scripts/git-hooks/commit-msg (CONTRIBUTING.md): a subject of at most 72 characters and a blank second line.

const root = path.resolve(__dirname, '../..');
const HOOK = path.join(root, 'scripts', 'git-hooks', 'commit-msg');

describe('the commit-msg hook', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'commit-msg-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** The hook's exit code and error output for a message, run as git runs it: the file's path as its argument. */
  function check(message: string): { status: number | null; stderr: string } {
    const file = path.join(dir, 'COMMIT_EDITMSG');
    writeFileSync(file, message);
    const { status, stderr } = spawnSync(HOOK, [file], { encoding: 'utf8' });
    return { status, stderr };
  }

  it('accepts a subject of 72 characters, alone or with a body after a blank line', () => {
    assert.equal(check(`${'a'.repeat(72)}\n`).status, 0);
    assert.equal(
      check('Rename RESTING\n\nWhy, then what, in the body: as long as it needs to be, on as many lines.\n').status,
      0,
    );
    assert.equal(check('Subject without a trailing newline').status, 0);
  });

  it('counts characters, not bytes', () => {
    assert.equal(check(`${'é'.repeat(72)}\n`).status, 0);
    assert.equal(check(`${'→'.repeat(73)}\n`).status, 1);
  });

  it('refuses a subject over 72 characters and says by how much', () => {
    const { status, stderr } = check(`${'a'.repeat(73)}\n\nbody\n`);
    assert.equal(status, 1);
    assert.match(stderr, /the subject is 73 characters; keep it to 72/);
  });

  it('refuses a body that starts on the second line', () => {
    const { status, stderr } = check('A short subject\nthe body right under it\n');
    assert.equal(status, 1);
    assert.match(stderr, /leave the second line blank/);
  });

  it('reads the message as git keeps it: comments, leading blank lines and the scissors are not the message', () => {
    assert.equal(check('\n\nA short subject\n\nbody\n# Please enter the commit message\n#\n').status, 0);
    assert.equal(check(`# ${'a'.repeat(100)}\nA short subject\n`).status, 0);
    assert.equal(
      check(
        `A short subject\n\nbody\n# ------------------------ >8 ------------------------\n${'x'.repeat(100)}\nno blank line\n`,
      ).status,
      0,
    );
  });

  it('leaves fixup!, squash! and amend! commits to be squashed', () => {
    assert.equal(check(`fixup! ${'a'.repeat(72)}\n`).status, 0);
    assert.equal(check(`squash! ${'a'.repeat(72)}\n`).status, 0);
  });

  it('stops a commit when git runs it through core.hooksPath', () => {
    const repo = path.join(dir, 'repo');
    const git = (...args: string[]) =>
      spawnSync(
        'git',
        ['-c', `core.hooksPath=${path.dirname(HOOK)}`, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args],
        { cwd: repo, encoding: 'utf8' },
      );
    spawnSync('git', ['init', '-q', repo]);
    writeFileSync(path.join(repo, 'file.txt'), 'one\n');
    assert.equal(git('add', 'file.txt').status, 0);
    const refused = git('commit', '-q', '-m', 'x'.repeat(80));
    assert.equal(refused.status, 1, refused.stderr);
    assert.match(refused.stderr, /the subject is 80 characters/);
    const kept = git('commit', '-q', '-m', 'A short subject', '-m', 'The detail, in the body.');
    assert.equal(kept.status, 0, kept.stderr);
    assert.equal(git('log', '-1', '--format=%s').stdout.trim(), 'A short subject');
  });
});
