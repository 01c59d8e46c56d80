import { startTcpProxy, type TcpProxy } from './tcp-proxy';
import type { PartnerHandler } from './partner-server';
import {
  serviceProcesses,
  startServiceFixtures,
  stopServiceFixtures,
  type StartedServiceFixtures,
} from './service-processes';

/** A test file's service fixtures, with a TCP proxy in front of the Temporal server for the api to stall through. */
export interface ProxiedService {
  readonly fixtures: StartedServiceFixtures;
  readonly proxy: TcpProxy;
}

/**
 * Registers the `before` and `after` of a test file whose processes reach Temporal through a proxy: the service
 * fixtures (dev server, PostgreSQL, a partner answering with `handler`) and the proxy, then their processes.
 */
export function useProxiedService(name: string, handler: PartnerHandler, env: Record<string, string>) {
  const started: Partial<{ -readonly [K in keyof ProxiedService]: ProxiedService[K] }> = {};
  const processes = serviceProcesses(() => started.fixtures!.setting(), env);
  before(async function () {
    this.timeout(60_000);
    started.fixtures = await startServiceFixtures(name, handler);
    started.proxy = await startTcpProxy('127.0.0.1', started.fixtures.serverPort);
  });
  after(async function () {
    this.timeout(60_000);
    await started.proxy?.close();
    await stopServiceFixtures(processes, started.fixtures ?? {});
  });
  return { processes, service: () => started as ProxiedService };
}
