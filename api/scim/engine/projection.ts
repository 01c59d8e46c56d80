import { parseAttributePath } from './filter/attribute-path';
import type { ScimResource } from './resource-definition';
import { resolveAttribute } from './resolve-attribute';

/**
 * Which attributes a response carries (RFC 7644 section 3.4.2.5): `attributes` narrows the default set,
 * `excludedAttributes` removes from it, and attributes returned "always" (`id`, `schemas`) stay.
 * Names are canonical (`members`, `members.value`); names the resource's schema lacks are ignored.
 */
export interface Projection {
  readonly attributes?: ReadonlySet<string>;
  readonly excluded: ReadonlySet<string>;
  /** The resource's `alwaysReturned`. */
  readonly always: ReadonlySet<string>;
}

export function parseProjection(
  resource: ScimResource,
  attributes: string | undefined,
  excludedAttributes: string | undefined,
): Projection {
  return {
    attributes: attributes === undefined ? undefined : canonicalNames(resource, attributes),
    excluded: excludedAttributes === undefined ? new Set() : canonicalNames(resource, excludedAttributes),
    always: resource.alwaysReturned,
  };
}

function canonicalNames(resource: ScimResource, list: string): Set<string> {
  const names = new Set<string>();
  for (const item of list.split(',')) {
    const path = parseAttributePath(item.trim());
    const resolved = path && resolveAttribute(resource, path);
    if (resolved) names.add(resolved.name);
  }
  return names;
}

/** Whether the top-level attribute `name` (or, with `sub`, its sub-attribute) is returned. */
export function isReturned(projection: Projection, name: string, sub?: string): boolean {
  const { attributes, excluded, always } = projection;
  if (always.has(name)) return true;
  if (excluded.has(name) || (sub !== undefined && excluded.has(`${name}.${sub}`))) return false;
  if (!attributes || attributes.has(name)) return true;
  if (sub !== undefined) return attributes.has(`${name}.${sub}`);
  return [...attributes].some((a) => a.startsWith(`${name}.`));
}

type Json = Record<string, unknown>;

/** Applies a projection to a full resource; complex values left without sub-attributes are dropped. */
export function project(resource: Json, projection: Projection): Json {
  if (projection.attributes === undefined && !excludesSubAttributes(projection))
    return withoutExcluded(resource, projection);
  const out: Json = {};
  for (const [name, value] of Object.entries(resource)) {
    if (!isReturned(projection, name)) continue;
    if (Array.isArray(value) && value.every(isObject)) {
      const items = value.map((item: Json) => pick(item, projection, name)).filter((item) => Object.keys(item).length);
      if (items.length) out[name] = items;
    } else if (isObject(value)) {
      const picked = pick(value, projection, name);
      if (Object.keys(picked).length) out[name] = picked;
    } else {
      out[name] = value;
    }
  }
  return out;
}

const excludesSubAttributes = ({ excluded }: Projection) => {
  for (const name of excluded) if (name.includes('.')) return true;
  return false;
};

/**
 * The common case (no `attributes`, whole attributes excluded at most) needs no walk through sub-attributes:
 * on a page of 100 groups that walk was a fifth of the API's CPU time.
 */
function withoutExcluded(resource: Json, { excluded, always }: Projection): Json {
  if (excluded.size === 0) return resource;
  const out: Json = {};
  for (const name in resource) if (always.has(name) || !excluded.has(name)) out[name] = resource[name];
  return out;
}

const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function pick(value: Json, projection: Projection, parent: string): Json {
  return Object.fromEntries(Object.entries(value).filter(([sub]) => isReturned(projection, parent, sub)));
}
