// The unit tier's guard (test/unit/support/no-server.ts, installed by test/unit/.mocharc.json) is in force:
// a test here that reached for a server would fail with this message, not wait for one.
import assert from 'node:assert/strict';
import child_process from 'node:child_process';
import dgram from 'node:dgram';
import http from 'node:http';
import net from 'node:net';
import { isNoServerGuardInstalled, NO_SERVER } from './support/no-server';

const refused = (what: string) =>
  new RegExp(
    `^${NO_SERVER}: ${what.replace(/[.()]/g, '\\$&')} \\(a test that needs one belongs outside test/unit/\\)$`,
  );

describe('the unit tier needs no server', () => {
  before(() =>
    assert.ok(isNoServerGuardInstalled(), 'the guard is installed: run the unit tier with npm run test:unit'),
  );

  it('refuses a connection, by net.connect and by fetch', async () => {
    assert.throws(() => net.connect(5432, '127.0.0.1'), { message: refused('a connection to 127.0.0.1:5432') });
    await assert.rejects(fetch('http://127.0.0.1:7233/'), (error: Error) => {
      assert.match((error.cause as Error).message, refused('a connection to 127.0.0.1:7233'));
      return true;
    });
  });

  it('refuses a listening server and a UDP socket', () => {
    assert.throws(() => http.createServer().listen(0, '127.0.0.1'), {
      message: refused('a server listening on 127.0.0.1:0'),
    });
    const socket = dgram.createSocket('udp4');
    assert.throws(() => socket.bind(0), { message: refused('a UDP socket') });
    socket.close();
  });

  it('refuses a child process, whichever way it is started', () => {
    assert.throws(() => child_process.execFileSync('true'), {
      message: refused('a child process (child_process.execFileSync true)'),
    });
    assert.throws(() => child_process.spawn('temporal', ['server', 'start-dev']), {
      message: refused('a child process (child_process.spawn temporal)'),
    });
    assert.throws(() => child_process.exec('pg_ctl start'), {
      message: refused('a child process (child_process.exec pg_ctl start)'),
    });
    assert.throws(() => child_process.fork('worker.js'), {
      message: refused('a child process (child_process.fork worker.js)'),
    });
  });
});
