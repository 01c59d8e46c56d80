import { Client, Connection, type ConnectionLike } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import { ensureSearchAttributes } from './register-search-attributes';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { dataConverterFor, temporalConnectionOptions } from './settings';
import { clientConnectionFailureInWords } from './tls-probe';
import { tracingEnabled } from '../lib/tracing';
import { TemporalSetupError, TemporalUnavailableError } from '../lib/errors';

export interface ClientConnectionOptions {
  readonly connectTimeoutMs: number;
  readonly callTimeoutMs: number;
  /** After a failed connect, later calls fail at once for this long instead of waiting again. */
  readonly failFastMs: number;
  /** The connection of a worker polling in this process, for eager starts (TemporalGatewayOptions). */
  readonly eagerStartVia?: () => ConnectionLike | undefined;
}

/** A connection and the client whose calls go through it. */
export interface ConnectedClient {
  readonly connection: ConnectionLike;
  readonly client: Client;
}

/** The gateway's clients: `connectAs` per identity, on one lazily made connection; `eagerStart` on a worker's. */
export interface ClientConnections {
  /** The connection and the client whose calls carry `identity` (the default client without one). */
  connectAs(identity: string | undefined): Promise<ConnectedClient>;
  /** The worker's connection and its client while a worker polls in this process; undefined otherwise. */
  eagerStart(): ConnectedClient | undefined;
  close(): Promise<void>;
}

/**
 * Connects lazily on first use, so the API serves while Temporal is down, and again on a later call after a
 * failure. The search attributes are registered on every new connection.
 */
export function createClientConnections(
  config: Config,
  logger: Logger,
  { connectTimeoutMs, callTimeoutMs, failFastMs, eagerStartVia }: ClientConnectionOptions,
): ClientConnections {
  const options = temporalConnectionOptions(config);
  // Traced: starts, updates and queries carry the caller's trace to the workflow in a Temporal header.
  const interceptors = tracingEnabled() ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : undefined;
  const clientOn = (connection: ConnectionLike, identity?: string) =>
    new Client({
      connection,
      namespace: config.temporal.namespace,
      dataConverter: dataConverterFor(config),
      interceptors,
      ...(identity !== undefined && { identity }),
    });
  /** One client per worker connection: a restarted worker brings a new one. */
  const eagerClients = new WeakMap<ConnectionLike, Client>();
  function eagerStart(): ConnectedClient | undefined {
    const connection = eagerStartVia?.();
    if (!connection) return undefined;
    let client = eagerClients.get(connection);
    if (!client) eagerClients.set(connection, (client = clientOn(connection)));
    return { connection, client };
  }
  const { address } = options;
  /** The connection and its clients: the default one, and one per identity an actor's calls carry. */
  interface Connected {
    readonly connection: Connection;
    readonly client: Client;
    readonly actingClients: Map<string, Client>;
  }
  let connecting: Promise<Connected> | undefined;
  let failedAt = -Infinity;
  let failure = '';

  async function connect() {
    if (Date.now() - failedAt < failFastMs) throw new TemporalUnavailableError(failure);
    connecting ??= (async () => {
      let connection: Connection | undefined;
      try {
        connection = await Connection.connect({ ...options, connectTimeout: connectTimeoutMs });
        // Starts that set unregistered search attributes are rejected: register them before the first one.
        await connection.withDeadline(Date.now() + callTimeoutMs, () =>
          ensureSearchAttributes(connection!, config.temporal.namespace),
        );
        return { connection, client: clientOn(connection), actingClients: new Map<string, Client>() };
      } catch (error) {
        connecting = undefined;
        await connection?.close().catch(() => undefined);
        if (error instanceof TemporalSetupError) {
          logger.error(error.message);
          throw error;
        }
        failedAt = Date.now();
        failure =
          `cannot connect to ${address} ` +
          `(${await clientConnectionFailureInWords(error, address, config.temporal)})`;
        logger.warn(
          { address, reason: failure },
          `Temporal is unreachable at ${address}: no webhook is accepted until it answers`,
        );
        throw new TemporalUnavailableError(failure);
      }
    })();
    return connecting;
  }

  /** The connection and the client whose calls carry `identity` (the default client without one). */
  async function connectAs(identity: string | undefined): Promise<ConnectedClient> {
    const connected = await connect();
    if (identity === undefined) return connected;
    let client = connected.actingClients.get(identity);
    if (!client) connected.actingClients.set(identity, (client = clientOn(connected.connection, identity)));
    return { connection: connected.connection, client };
  }

  return {
    connectAs,
    eagerStart,
    async close() {
      const current = connecting;
      connecting = undefined;
      await current?.then(
        ({ connection }) => connection.close(),
        () => undefined,
      );
    },
  };
}
