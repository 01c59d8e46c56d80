import net from 'node:net';
import { Transform } from 'node:stream';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay on 127.0.0.1 in front of a real server (PostgreSQL, Temporal). `cut()` drops every connection and
 * stops listening, so the server looks down; `restore()` listens on the same port again; `delay()` holds the
 * bytes each way for a while, in order, so calls through it pass their deadlines while the server stays up.
 */
export interface TcpProxy {
  readonly port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  /** Every chunk relayed from now on is held this many ms before it goes on (0: at once), never overtaking an earlier one. */
  delay(delays: { readonly toServer?: number; readonly toClient?: number }): void;
  close(): Promise<void>;
}

type Direction = 'toServer' | 'toClient';

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const delays: Record<Direction, number> = { toServer: 0, toClient: 0 };
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    track(client);
    track(upstream);
    client.pipe(delayed(() => delays.toServer)).pipe(upstream);
    upstream.pipe(delayed(() => delays.toClient)).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      if (server.listening) server.close(() => resolve());
      else resolve();
    });
  await listen(0);
  const { port } = server.address() as AddressInfo;
  return { port, cut: stop, restore: () => listen(port), delay: (next) => Object.assign(delays, next), close: stop };
}

/** A pass-through that releases each chunk `delayMs()` after it came (as read then), in arrival order. */
function delayed(delayMs: () => number): Transform {
  const queue: { chunk: Buffer; releaseAt: number }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let flushed: (() => void) | undefined;
  const pump = (stream: Transform) => {
    timer = undefined;
    while (queue.length && queue[0].releaseAt <= Date.now()) stream.push(queue.shift()!.chunk);
    if (queue.length) timer = setTimeout(() => pump(stream), queue[0].releaseAt - Date.now());
    else flushed?.();
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const releaseAt = Math.max(Date.now() + delayMs(), queue.at(-1)?.releaseAt ?? 0);
      queue.push({ chunk, releaseAt });
      if (!timer) pump(this);
      done();
    },
    flush(done) {
      if (!queue.length) return done();
      flushed = done;
    },
    destroy(error, done) {
      clearTimeout(timer);
      done(error);
    },
  });
}
