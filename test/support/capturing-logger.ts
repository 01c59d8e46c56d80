import { Writable } from 'node:stream';
import pino from 'pino';

/** A pino logger whose JSON lines the test can read back, raw and parsed. */
export function capturingLogger() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return {
    logger: pino({ level: 'debug' }, stream),
    lines,
    entries: () => lines.map((l) => JSON.parse(l) as { level: number; msg: string }),
  };
}
