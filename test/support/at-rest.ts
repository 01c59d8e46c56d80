import { dataAtRest } from '../../lib/at-rest';

/** Bodies and excerpts in clear, the subject index under the development key: the default without settings. */
export const IN_CLEAR = dataAtRest({});
