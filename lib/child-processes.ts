import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessEntry {
  readonly pid: number;
  readonly ppid: number;
  /** Process group. */
  readonly pgrp: number;
  /** The command line, arguments separated by spaces. */
  readonly args: string;
}

/** Every live process that /proc shows (Linux), zombies left out; none elsewhere. */
export function listProcesses(): ProcessEntry[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  } catch {
    return [];
  }
  const found: ProcessEntry[] = [];
  for (const entry of entries) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // After the command name's ")": state, ppid, pgrp, ...
      const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z') continue;
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      found.push({ pid: Number(entry), ppid: Number(ppid), pgrp: Number(pgrp), args });
    } catch {
      // Ended while we looked.
    }
  }
  return found;
}

/**
 * Signals this process's child processes whose command line includes `text`: for a library's child that the
 * library gives no handle on (initdb, a starting postgres), when a stop signal comes during start-up. With
 * SIGKILL their own children are killed too, since a killed parent cannot stop them; any other signal asks the
 * child to stop its own. Returns how many it signalled.
 */
export function killChildProcessesNaming(text: string, signal: NodeJS.Signals): number {
  const processes = listProcesses();
  const childrenOf = (pid: number) => processes.filter((p) => p.ppid === pid);
  const doomed = childrenOf(process.pid).filter((p) => p.args.includes(text));
  if (signal === 'SIGKILL') for (let i = 0; i < doomed.length; i++) doomed.push(...childrenOf(doomed[i].pid));
  let signalled = 0;
  for (const { pid } of doomed) {
    try {
      process.kill(pid, signal);
      signalled++;
    } catch {
      // Already gone.
    }
  }
  return signalled;
}
