import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/** The parts of a V8 .cpuprofile (what `node --cpu-prof` writes) that self time needs. */
interface CpuProfile {
  readonly nodes: ReadonlyArray<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: readonly number[] }>;
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

type CallFrame = CpuProfile['nodes'][number]['callFrame'];

/** One sample: the frame on top, its callers (top first, computed on demand), the thread and its time. */
export interface ProfileSample {
  readonly frame: CallFrame;
  stack(): CallFrame[];
  /** True for the process's main thread (thread 0 in `node --cpu-prof`'s file names). */
  readonly mainThread: boolean;
  readonly ms: number;
}

/** Calls `visit` for every sample on CPU ((idle) left out) of every .cpuprofile in `dir`; returns the file count. */
async function visitSamples(dir: string, visit: (sample: ProfileSample) => void): Promise<number> {
  const files = (await readdir(dir)).filter((file) => file.endsWith('.cpuprofile'));
  for (const file of files) {
    const profile = JSON.parse(await readFile(path.join(dir, file), 'utf8')) as CpuProfile;
    const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
    const parents = new Map<number, number>(profile.nodes.flatMap((node) => (node.children ?? []).map((child): [number, number] => [child, node.id])));
    // CPU.<date>.<time>.<pid>.<thread>.<sequence>.cpuprofile
    const mainThread = file.split('.')[4] === '0';
    profile.samples.forEach((id, i) => {
      const frame = frames.get(id)!;
      if (frame.functionName === '(idle)') return;
      const stack = () => {
        const chain: CallFrame[] = [];
        for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) chain.push(frames.get(at)!);
        return chain;
      };
      // A sample stands for the interval until the next one.
      visit({ frame, stack, mainThread, ms: (profile.timeDeltas[i + 1] ?? 0) / 1000 });
    });
  }
  return files.length;
}

/** Self time by frame over every .cpuprofile in `dir`, threads added together. */
export async function topSelfTime(dir: string, limit: number): Promise<SelfTimeProfile> {
  const byFrame = new Map<string, SelfTimeFrame>();
  const files = await visitSamples(dir, ({ frame: { functionName, url, lineNumber }, ms }) => {
    const name = functionName || '(anonymous)';
    const location = url ? `${path.basename(url)}:${lineNumber + 1}${packageOf(url)}` : '';
    const key = `${name}\n${location}`;
    byFrame.set(key, { name, location, selfMs: (byFrame.get(key)?.selfMs ?? 0) + ms });
  });
  const all = [...byFrame.values()].sort((a, b) => b.selfMs - a.selfMs);
  return { files, busyMs: all.reduce((sum, frame) => sum + frame.selfMs, 0), top: all.slice(0, limit) };
}

/** Sampled time by the category `categorize` gives each sample, most first, with the total. */
export async function sampledShares(dir: string, categorize: (sample: ProfileSample) => string): Promise<{ busyMs: number; shares: Array<{ category: string; ms: number }> }> {
  const byCategory = new Map<string, number>();
  await visitSamples(dir, (sample) => {
    const category = categorize(sample);
    byCategory.set(category, (byCategory.get(category) ?? 0) + sample.ms);
  });
  const shares = [...byCategory].map(([category, ms]) => ({ category, ms })).sort((a, b) => b.ms - a.ms);
  return { busyMs: shares.reduce((sum, share) => sum + share.ms, 0), shares };
}

/** The npm package of a script under node_modules (`@scope/name` or `name`), else undefined. */
export function npmPackageOf(url: string): string | undefined {
  const at = url.lastIndexOf('/node_modules/');
  if (at < 0) return undefined;
  const parts = url.slice(at + '/node_modules/'.length).split('/');
  return parts.slice(0, parts[0].startsWith('@') ? 2 : 1).join('/');
}

/** " (@scope/name)" for a script under node_modules, since basenames like index.js say little; else "". */
function packageOf(url: string): string {
  const name = npmPackageOf(url);
  return name ? ` (${name})` : '';
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
