// Where the SCIM API's CPU goes under load, between benchmark runs:
// `npx tsx bench/scim-profile.ts [query name, as in bench/scim-queries.ts: page-100 by default]`
// against the directory kept in .prof/ (see scim-profile-db.ts).
import { profileApiUnderLoad, profileTable } from './api-profile';
import { withProfileDirectory } from './scim-profile-db';
import { apiPath, benchQueryNamed } from './scim-queries';

async function main(name = 'page-100') {
  await withProfileDirectory(async (url) => {
    const profiled = await profileApiUnderLoad(url, apiPath(benchQueryNamed(name)), 8, Number(process.env.SECONDS ?? 8), 20);
    process.stdout.write(`${Math.round(profiled.load.reqPerSec)} req/s under the profiler\n\n${profileTable(profiled, name)}\n`);
  });
}

void main(process.argv[2]);
