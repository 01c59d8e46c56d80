import type { AttributePath } from './filter/ast';
import { findAttribute, GROUP_ATTRIBUTES, GROUP_SCHEMA_URN, type AttributeDefinition } from './group-schema';

/** An attribute reference resolved against the Group schema. */
export interface ResolvedAttribute {
  /** Canonical name such as `displayName` or `members.value`. */
  readonly name: string;
  readonly definition: AttributeDefinition;
  readonly parent?: AttributeDefinition;
}

/**
 * Resolves `[urn:...:Group:]attribute[.sub]` case-insensitively; undefined when the Group resource has
 * no such attribute (or the URN names another schema).
 */
export function resolveGroupAttribute(path: AttributePath): ResolvedAttribute | undefined {
  if (path.uri && path.uri.toLowerCase() !== GROUP_SCHEMA_URN.toLowerCase()) return undefined;
  const top = findAttribute(GROUP_ATTRIBUTES, path.attribute);
  if (!top) return undefined;
  if (path.subAttribute === undefined) return { name: top.name, definition: top };
  const sub = findAttribute(top.subAttributes, path.subAttribute);
  return sub && { name: `${top.name}.${sub.name}`, definition: sub, parent: top };
}

/** Resolves a sub-attribute named inside `parent[...]`, where URNs and dotted names do not apply. */
export function resolveSubAttribute(parent: AttributeDefinition, path: AttributePath): ResolvedAttribute | undefined {
  const sub = path.uri || path.subAttribute ? undefined : findAttribute(parent.subAttributes, path.attribute);
  return sub && { name: `${parent.name}.${sub.name}`, definition: sub, parent };
}
