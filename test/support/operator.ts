import type { OperatorContext } from '../../application/access/audit';

/** The operator of tests that call the application's operations directly; their audit rows name it. */
export const OPERATOR: OperatorContext = { actor: 'test-operator' };
