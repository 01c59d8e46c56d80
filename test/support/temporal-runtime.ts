import { createLogger } from '../../lib/logger';
import { installTemporalRuntime } from '../../worker/temporal-runtime';

/** Installs the Temporal runtime once per mocha process with a logger that drops everything. */
export function installQuietTemporalRuntime(): void {
  installTemporalRuntime(createLogger('silent'));
}
