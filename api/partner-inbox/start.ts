import { serveHttp } from '../server';
import { createPartnerInboxApp, type PartnerInboxOptions } from './app';

/** The port the inbox takes when it is free, so that its URL is the same from one `start` to the next. */
export const PARTNER_INBOX_PORT = 3002;

export interface PartnerInbox {
  /** The page, e.g. http://127.0.0.1:3002/ */
  readonly url: string;
  /** What the worker POSTs to: PARTNER_ENDPOINT while the inbox runs. */
  readonly endpoint: string;
  /** Stops accepting requests and resolves once those in flight are answered. */
  close(): Promise<void>;
}

/** Serves the partner inbox on 127.0.0.1 only (`port` 0 picks a free one). */
export async function startPartnerInbox(
  options: PartnerInboxOptions & { readonly port: number },
): Promise<PartnerInbox> {
  const server = await serveHttp(createPartnerInboxApp(options), options.port, '127.0.0.1');
  return { url: `${server.url}/`, endpoint: `${server.url}/webhooks`, close: () => server.close() };
}
