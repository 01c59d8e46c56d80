import type { SqlFragment } from '../../../db/sql';

/**
 * A resource's attribute catalogue: one definition per attribute drives filter resolution and its SQL,
 * attribute projection and the /Schemas discovery document.
 */

export type ScimType = 'string' | 'boolean' | 'dateTime' | 'reference' | 'complex';
export type Returned = 'always' | 'default';

/** How a filter reads a leaf attribute in SQL. */
export interface AttributeSql {
  /** The value as SQL; `baseUrl` is the SCIM base URL, for reference attributes. */
  readonly expression: (baseUrl: string) => SqlFragment;
  /** Reads tables that its multi-valued parent's `exists` joins only when asked to. */
  readonly joined?: boolean;
  /** eq/ne on a key: the SQL of `key <operator> value`, or undefined when no row can hold `value`. */
  readonly equality?: (operator: '=' | '<>', value: string) => SqlFragment | undefined;
  /**
   * Sub-attributes of a multi-valued attribute whose values the EXISTS cannot find by index (such as an
   * array column's elements): for `eq`, an indexable predicate on the resource row that every resource
   * holding `value` satisfies. The compiler puts it before the EXISTS, which still decides.
   */
  readonly containing?: (value: string) => SqlFragment;
}

export interface AttributeDefinition {
  readonly name: string;
  readonly type: ScimType;
  readonly description: string;
  readonly multiValued: boolean;
  readonly caseExact: boolean;
  readonly required: boolean;
  readonly returned: Returned;
  readonly referenceTypes?: readonly string[];
  readonly canonicalValues?: readonly string[];
  readonly subAttributes?: readonly AttributeDefinition[];
  /** Common attributes (id, externalId, meta) are not part of the schema document (RFC 7643 section 3.1). */
  readonly common?: boolean;
  /** Leaf attributes: their SQL, for filters. */
  readonly sql?: AttributeSql;
  /**
   * Multi-valued complex attributes: `EXISTS (…)` over the value rows, correlated with the resource row,
   * with `condition` on one value; `joined` when the condition reads a sub-attribute marked `joined`.
   */
  readonly exists?: (condition: SqlFragment, joined: boolean) => SqlFragment;
}

/** The attributes of one resource type under its core schema URN: what attribute names resolve against. */
export interface ResourceSchema {
  readonly schema: string;
  readonly attributes: readonly AttributeDefinition[];
}

/** An attribute definition with the usual defaults: single-valued, case-insensitive, optional, returned by default. */
export const attribute = (
  name: string,
  type: ScimType,
  description: string,
  options: Partial<AttributeDefinition> = {},
): AttributeDefinition => ({
  name,
  type,
  description,
  multiValued: false,
  caseExact: false,
  required: false,
  returned: 'default',
  ...options,
});

/** A leaf whose SQL is one fixed expression, such as a column. */
export const columnSql = (expression: SqlFragment): AttributeSql => ({ expression: () => expression });

/** Finds an attribute by name, case-insensitively (RFC 7643 section 2.1). */
export function findAttribute(
  attributes: readonly AttributeDefinition[] | undefined,
  name: string,
): AttributeDefinition | undefined {
  const lower = name.toLowerCase();
  return attributes?.find((a) => a.name.toLowerCase() === lower);
}
