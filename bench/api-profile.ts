import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { selfTimeRows, topSelfTime, type SelfTimeProfile } from './cpu-profile';
import { drive, type LoadFigures } from './load';
import { startServerChild } from './server-child';

export interface ApiProfile {
  readonly profile: SelfTimeProfile;
  readonly load: LoadFigures;
}

/**
 * The real API in a fresh process under `node --cpu-prof`, driven at `connections` for `seconds` on one URL
 * (after a 1 s warm-up): where its CPU goes. Profiling slows it, so its figures are not compared with others.
 */
export async function profileApiUnderLoad(databaseUrl: string, pathAndQuery: string, connections: number, seconds: number, top = 12): Promise<ApiProfile> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pis-api-profile-'));
  try {
    const api = await startServerChild('api-process', { DATABASE_URL: databaseUrl }, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
    let load: LoadFigures;
    try {
      const url = `${api.url}${pathAndQuery}`;
      await drive(url, { accept: 'application/json' }, connections, 1);
      load = await drive(url, { accept: 'application/json' }, connections, seconds);
    } finally {
      await api.stop();
    }
    return { profile: await topSelfTime(dir, top), load };
  } finally {
    // KEEP_CPU_PROFILE=1 keeps the .cpuprofile for a closer look (Chrome DevTools, or an inclusive-time sum).
    if (process.env.KEEP_CPU_PROFILE) process.stderr.write(`cpu profile kept in ${dir}\n`);
    else await rm(dir, { recursive: true, force: true });
  }
}

/** The profile as a Markdown table: frame, where, self ms and share of the sampled CPU time. */
export function profileTable({ profile, load }: ApiProfile, what: string): string {
  return [
    `${what}: ${load.requests.toLocaleString('en')} requests (warm-up included in the profile), ` +
      `${(profile.busyMs / 1000).toFixed(2)} s on CPU, about ${(profile.busyMs / load.requests).toFixed(2)} ms of API CPU per request. Top frames by self time:`,
    '',
    ...selfTimeRows(profile),
  ].join('\n');
}
