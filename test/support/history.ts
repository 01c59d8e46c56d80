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
