import type { BenchEndpoint } from './scim-resources';
import { benchGroupId, benchMemberUser } from './scim-seed';

/** SCIM list queries the between-runs diagnostics (scim-profile, scim-overhead) look at, by name. */
export const SCIM_PRESETS: Record<string, { endpoint: BenchEndpoint; query: Record<string, string> }> = {
  page: { endpoint: 'Groups', query: { count: '100', excludedAttributes: 'members' } },
  members: { endpoint: 'Groups', query: { filter: `members[value eq "${benchMemberUser(42_317, 3)}"]` } },
  'users-membership': {
    endpoint: 'Users',
    query: { filter: `id eq "${benchMemberUser(42_317, 3)}" and groups.value eq "${benchGroupId(42_317)}"` },
  },
};

export const presetPath = (name: string): string => {
  const preset = SCIM_PRESETS[name];
  if (!preset) throw new Error(`Unknown preset ${name}; use one of ${Object.keys(SCIM_PRESETS).join(', ')}`);
  return `/scim/v2/${preset.endpoint}?${new URLSearchParams(preset.query)}`;
};
