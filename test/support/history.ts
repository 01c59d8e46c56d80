// Reading workflow histories as a person would read their payloads: protobuf bytes decoded, not stringified.
import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;

/** Every string in the history, with each byte field (payload data, metadata) decoded as UTF-8. */
export function historyTexts(history: History): string[] {
  const texts: string[] = [];
  const seen = new Set<object>();
  const walk = (value: unknown): void => {
    if (typeof value === 'string') texts.push(value);
    else if (value instanceof Uint8Array) texts.push(Buffer.from(value).toString('utf8'));
    else if (value && typeof value === 'object' && !seen.has(value)) {
      seen.add(value);
      for (const child of Object.values(value)) walk(child);
    }
  };
  walk(history);
  return texts;
}

/** How many decoded texts of the history contain `needle`. */
export function occurrencesIn(history: History, needle: string): number {
  return historyTexts(history).filter((text) => text.includes(needle)).length;
}

/** The history's size as the server stores and sends it: encoded protobuf bytes. */
export function encodedHistoryBytes(history: History): number {
  return temporal.api.history.v1.History.encode(history).finish().length;
}

/** Every payload in a history (a proto object or its JSON), with its path; search attributes included. */
export function historyPayloads<P extends object>(history: object): Array<{ path: string; payload: P }> {
  const found: Array<{ path: string; payload: P }> = [];
  const walk = (value: unknown, path: string): void => {
    if (!value || typeof value !== 'object' || value instanceof Uint8Array) return;
    const node = value as { metadata?: unknown };
    if (node.metadata && typeof node.metadata === 'object' && 'encoding' in node.metadata) {
      found.push({ path, payload: node as P });
      return;
    }
    for (const [key, child] of Object.entries(node)) walk(child, `${path}.${key}`);
  };
  walk(history, 'history');
  return found;
}

/**
 * The payloads an encrypting data converter leaves in clear, as a real dev server shows: search attributes
 * (never encrypted, so no PII in them) and the SDK core's own marker bookkeeping (the patch id; a local
 * activity's seq, attempt and times), which carries no event data.
 */
export const leftInClear = (path: string): boolean =>
  path.includes('.searchAttributes.') || /\.markerRecordedEventAttributes\.details\.(data|patch-data)\./.test(path);
