import { createHash } from 'node:crypto';
import type { Config } from './config';

// Placeholder of the lead's lib/at-rest.ts (the same names), until the foundation is merged: the merge takes theirs.

export const DEVELOPMENT_SUBJECT_INDEX_KEY = createHash('sha256').update('partner-integration-service development subject index key').digest();

export interface DataAtRest {
  readonly subjectSecret: Buffer;
  readonly developmentSubjectKey: boolean;
}

export function dataAtRest(config: Pick<Config, 'SUBJECT_INDEX_KEY'>): DataAtRest {
  return { subjectSecret: config.SUBJECT_INDEX_KEY ?? DEVELOPMENT_SUBJECT_INDEX_KEY, developmentSubjectKey: config.SUBJECT_INDEX_KEY === undefined };
}
