import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Knex } from '../../db/database';

/** Linux process figures from /proc, to measure each process of a benchmark on its own. */

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** A file of /proc; undefined once the process is gone. */
function readProc(file: string): string | undefined {
  try {
    return readFileSync(`/proc/${file}`, 'utf8');
  } catch {
    return undefined;
  }
}

/** The fields of /proc/<pid>/stat after the command name (which may itself hold spaces); undefined once gone. */
function statFields(pid: number): string[] | undefined {
  const stat = readProc(`${pid}/stat`);
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
}

// Offsets into statFields: stat(5) numbers ppid 4, utime 14, stime 15, cutime 16, cstime 17; the slice starts at 3.
const [PPID, UTIME, STIME, CUTIME, CSTIME] = [1, 11, 12, 13, 14];

const ticks = (fields: string[], ...indices: number[]) => indices.reduce((sum, i) => sum + Number(fields[i]), 0);

function parentPid(pid: number): number | undefined {
  const fields = statFields(pid);
  return fields ? Number(fields[PPID]) : undefined;
}

/** User plus system CPU seconds of one process (all its threads); 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  const fields = statFields(pid);
  return fields ? ticks(fields, UTIME, STIME) / TICKS_PER_SECOND : 0;
}

/**
 * CPU seconds of a process and all its children, living or reaped: what a PostgreSQL postmaster and its
 * backends have used. A child's time moves into the parent's cutime/cstime when it is reaped.
 */
function treeCpuSeconds(rootPid: number): number {
  const root = statFields(rootPid);
  if (!root) return 0;
  let total = ticks(root, UTIME, STIME, CUTIME, CSTIME);
  for (const child of childPids(rootPid)) {
    const fields = statFields(child);
    if (fields) total += ticks(fields, UTIME, STIME);
  }
  return total / TICKS_PER_SECOND;
}

/** The living children of a process. */
export function childPids(parent: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && parentPid(Number(entry)) === parent)
    .map(Number);
}

/** Busy CPU seconds of the whole machine (all cores), from /proc/stat. */
export function machineBusySeconds(): number {
  const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = values;
  return (user + nice + system + irq + softirq + steal) / TICKS_PER_SECOND;
}

/** Resident set size from /proc/<pid>/status (VmRSS); 0 once the process is gone. */
function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readProc(`${pid}/status`) ?? '');
  return match ? Number(match[1]) * 1024 : 0;
}

export interface RssSampler {
  /** Highest VmRSS seen per pid since the sampler started. */
  peak(pid: number): number;
  stop(): void;
}

/** Samples VmRSS of `pids` every `intervalMs` (peak RSS of processes that are not our children). */
export function sampleRss(pids: readonly number[], intervalMs = 200): RssSampler {
  const peaks = new Map(pids.map((pid) => [pid, rssBytes(pid)]));
  const timer = setInterval(() => {
    for (const pid of pids) peaks.set(pid, Math.max(peaks.get(pid)!, rssBytes(pid)));
  }, intervalMs);
  return { peak: (pid) => peaks.get(pid) ?? 0, stop: () => clearInterval(timer) };
}

/** The command name of a process (/proc/<pid>/comm), or undefined when there is none. */
export const commandName = (pid: number): string | undefined => readProc(`${pid}/comm`)?.trim();

/** The arguments a process was started with (/proc/<pid>/cmdline); empty once it is gone. */
export const commandLine = (pid: number): string[] => readProc(`${pid}/cmdline`)?.split('\0').slice(0, -1) ?? [];

/**
 * A clock of PostgreSQL's CPU seconds: its postmaster (the parent of our own backend) and all its backends;
 * NaN when the server is remote (a remote backend's pid means nothing here; a local one runs as postgres).
 */
export async function postgresCpuClock(knex: Knex): Promise<() => number> {
  const { rows } = await knex.raw('select pg_backend_pid() as pid');
  const parent = parentPid(rows[0].pid);
  const local = parent !== undefined && commandName(parent) === 'postgres' && commandName(rows[0].pid) === 'postgres';
  return () => (local ? treeCpuSeconds(parent) : NaN);
}
