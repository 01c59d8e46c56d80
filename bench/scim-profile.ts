// Where the SCIM API's CPU goes under load, between benchmark runs:
// `npx tsx bench/scim-profile.ts [page|members|users-membership]`
// against the directory kept in .prof/ (see scim-profile-db.ts).
import { profileApiUnderLoad, profileTable } from './api-profile';
import { withProfileDirectory } from './scim-profile-db';
import { presetPath } from './scim-presets';

async function main(preset = 'page') {
  await withProfileDirectory(async (url) => {
    const profiled = await profileApiUnderLoad(url, presetPath(preset), 8, Number(process.env.SECONDS ?? 8), 20);
    process.stdout.write(`${Math.round(profiled.load.reqPerSec)} req/s under the profiler\n\n${profileTable(profiled, preset)}\n`);
  });
}

void main(process.argv[2]);
