import { findAttribute, type AttributeDefinition, type ResourceSchema } from './attributes';
import type { AttributePath } from './filter/ast';

/** An attribute reference resolved against a resource's schema. */
export interface ResolvedAttribute {
  /** Canonical name such as `displayName` or `members.value`. */
  readonly name: string;
  readonly definition: AttributeDefinition;
  readonly parent?: AttributeDefinition;
}

/**
 * Resolves `[schema URN:]attribute[.sub]` case-insensitively; undefined when the resource has no
 * such attribute (or the URN names another schema).
 */
export function resolveAttribute(resource: ResourceSchema, path: AttributePath): ResolvedAttribute | undefined {
  if (path.uri && path.uri.toLowerCase() !== resource.schema.toLowerCase()) return undefined;
  const top = findAttribute(resource.attributes, path.attribute);
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
