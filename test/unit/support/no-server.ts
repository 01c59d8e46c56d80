// The unit tier's guard: test/unit/support/install-no-server.ts installs it for `npm run test:unit`
// (test/unit/.mocharc.json) before any test file, and nothing else does. The unit tier needs no server, so a
// socket, a listening server or a child process fails the test that asks for one, loudly, instead of slowing the
// tier down or passing only where a server happens to run. esbuild's own process (tsx compiles the test files
// with it) is the one exception.
import child_process from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';

export const NO_SERVER = 'unit tests need no server';

let installed = false;

/** Whether this process runs with the guard: a unit test that proves the guard asks first. */
export const isNoServerGuardInstalled = (): boolean => installed;

function refuse(what: string): never {
  throw new Error(`${NO_SERVER}: ${what} (a test that needs one belongs outside test/unit/)`);
}

function describeTarget(args: unknown[]): string {
  // net.connect() passes its arguments on normalized, as one array.
  const [first, second] = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  if (typeof first === 'object' && first !== null) {
    const { host, port, path } = first as { host?: string; port?: number; path?: string };
    return path ?? `${host ?? 'localhost'}:${port}`;
  }
  return typeof second === 'string' ? `${second}:${String(first)}` : String(first);
}

const isEsbuild = (command: unknown): boolean =>
  typeof command === 'string' && /[\\/]esbuild[\\/]|[\\/]esbuild(\.exe)?$/.test(command);

/** Makes every socket, server and child process of this process (esbuild's excepted) throw. Once is enough. */
export function installNoServerGuard(): void {
  if (installed) return;
  installed = true;
  net.Socket.prototype.connect = function connect(...args: unknown[]): never {
    refuse(`a connection to ${describeTarget(args)}`);
  };
  net.Server.prototype.listen = function listen(...args: unknown[]): never {
    refuse(`a server listening on ${describeTarget(args)}`);
  } as typeof net.Server.prototype.listen;
  dgram.Socket.prototype.bind = function bind(): never {
    refuse('a UDP socket');
  };
  for (const name of ['spawn', 'spawnSync', 'execFile', 'execFileSync', 'exec', 'execSync', 'fork'] as const) {
    const original = child_process[name] as (...args: unknown[]) => unknown;
    (child_process as Record<string, unknown>)[name] = function guarded(
      this: unknown,
      command: unknown,
      ...rest: unknown[]
    ): unknown {
      if (name !== 'exec' && name !== 'execSync' && name !== 'fork' && isEsbuild(command))
        return original.call(this, command, ...rest);
      return refuse(`a child process (child_process.${name} ${String(command)})`);
    };
  }
}
