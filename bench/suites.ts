import { deliveriesSuite } from './deliveries-suite';
import { importSuite } from './import-suite';
import { listingsSuite } from './listings-suite';
import { scimSuite } from './scim-suite';
import type { BenchmarkSuite } from './suite';

/** Every suite `npm run bench` runs, in order. */
export const suites: BenchmarkSuite[] = [importSuite, listingsSuite, scimSuite, deliveriesSuite];
