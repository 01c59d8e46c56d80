/** The lines of a process's output that are not blank. */
export const linesOf = (text: string): string[] => text.split('\n').filter((line) => line.trim() !== '');

/** A log line of the service (pino's JSON): its level, its message and whatever fields it carries. */
export interface LogLine {
  level: number;
  msg: string;
  [field: string]: any;
}

/**
 * The JSON log lines of a process's output, parsed, in order. Lines that are not JSON objects (a command's
 * plain output, a runtime's warning) are passed over.
 */
export const logLines = <T = LogLine>(text: string): T[] =>
  linesOf(text)
    .filter((line) => line.trimStart().startsWith('{'))
    .map((line) => JSON.parse(line) as T);
