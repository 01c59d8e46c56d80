import net from 'node:net';

/**
 * Picked below Linux's ephemeral range (32768-60999 by default), where the kernel never puts an outgoing
 * connection: a port asked of the kernel (listen on 0) comes from that range, and another connection could take
 * it between the pick and the server's bind (seen in CI: "address already in use").
 */
const PICK_FROM = 20_000;
const PICK_BELOW = 32_768;
/** Ports this process handed out: two servers asked for one after the other never get the same port. */
const handedOut = new Set<number>();

/** A free loopback port, below the ephemeral range, that this process has not handed out before. */
export async function findFreePort(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = PICK_FROM + Math.floor(Math.random() * (PICK_BELOW - PICK_FROM));
    if (handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
  return listenOn(0);
}

/**
 * The conventional port on 127.0.0.1 when it is free (so `temporal workflow list` and the documented URLs
 * work as is), else any free one.
 */
export async function preferPort(port: number): Promise<number> {
  return (await canListen(port)) ? port : findFreePort();
}

const canListen = (port: number) =>
  listenOn(port).then(
    () => true,
    () => false,
  );

/** Listens on the port (0: any the kernel picks) and closes again, resolving to the port it had. */
function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as net.AddressInfo;
      server.close(() => resolve(bound));
    });
  });
}
