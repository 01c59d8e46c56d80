import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/** The parts of a V8 .cpuprofile (what `node --cpu-prof` writes) that self time needs. */
interface CpuProfile {
  readonly nodes: ReadonlyArray<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  /** Node id on top of the stack at each sample. */
  readonly samples: readonly number[];
  /** Microseconds since the previous sample. */
  readonly timeDeltas: readonly number[];
}

export interface SelfTimeFrame {
  /** Function name, or (anonymous), (garbage collector), (program)… */
  readonly name: string;
  /** Script basename and 1-based line, with its npm package if any; empty for V8's pseudo-frames. */
  readonly location: string;
  readonly selfMs: number;
}

export interface SelfTimeProfile {
  /** The .cpuprofile files read: one per thread (main and each worker_thread). */
  readonly files: number;
  /** Sampled time on CPU, all files together, without (idle). */
  readonly busyMs: number;
  /** Most self time first, (idle) left out. */
  readonly top: readonly SelfTimeFrame[];
}

/** Self time by frame over every .cpuprofile in `dir`, threads added together. */
export async function topSelfTime(dir: string, limit: number): Promise<SelfTimeProfile> {
  const files = (await readdir(dir)).filter((file) => file.endsWith('.cpuprofile'));
  const byFrame = new Map<string, SelfTimeFrame>();
  for (const file of files) {
    const profile = JSON.parse(await readFile(path.join(dir, file), 'utf8')) as CpuProfile;
    const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
    profile.samples.forEach((id, i) => {
      // A sample stands for the interval until the next one.
      const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
      const { functionName, url, lineNumber } = frames.get(id)!;
      if (functionName === '(idle)') return;
      const name = functionName || '(anonymous)';
      const location = url ? `${path.basename(url)}:${lineNumber + 1}${packageOf(url)}` : '';
      const key = `${name}\n${location}`;
      byFrame.set(key, { name, location, selfMs: (byFrame.get(key)?.selfMs ?? 0) + ms });
    });
  }
  const all = [...byFrame.values()].sort((a, b) => b.selfMs - a.selfMs);
  return { files: files.length, busyMs: all.reduce((sum, frame) => sum + frame.selfMs, 0), top: all.slice(0, limit) };
}

/** " (@scope/name)" for a script under node_modules, since basenames like index.js say little; else "". */
function packageOf(url: string): string {
  const at = url.lastIndexOf('/node_modules/');
  if (at < 0) return '';
  const parts = url.slice(at + '/node_modules/'.length).split('/');
  return ` (${parts.slice(0, parts[0].startsWith('@') ? 2 : 1).join('/')})`;
}

/** The top frames as Markdown table rows, with a header. */
export function selfTimeRows(profile: SelfTimeProfile): string[] {
  return [
    '| # | function | where | self ms | % of sampled |',
    '|---:|---|---|---:|---:|',
    ...profile.top.map((frame, i) =>
      `| ${i + 1} | \`${frame.name}\` | ${frame.location || '(V8)'} | ${frame.selfMs.toFixed(0)} | ${((frame.selfMs / profile.busyMs) * 100).toFixed(1)} % |`),
  ];
}
