import { findAttribute, type AttributeDefinition, type AttributeSql, type ResourceSchema } from '../attributes';
import { invalidFilter } from '../errors';
import { resolveAttribute, resolveSubAttribute, type ResolvedAttribute } from '../resolve-attribute';
import { joinSql, raw, sql, type SqlFragment } from '../../../../db/sql';
import { folded } from '../sql-text';
import type { AttributePath, CompareOperator, FilterNode, Literal } from './ast';
import { normaliseDateTime } from './datetime';
import { NO_FILTER } from './unfiltered';

/**
 * A predicate and whether it reads the joins of its multi-valued attribute's EXISTS. `containing` is the
 * indexable row condition that the EXISTS around it gets as a prefilter (see AttributeSql.containing).
 */
interface Predicate {
  readonly sql: SqlFragment;
  readonly joined: boolean;
  readonly containing?: SqlFragment;
}

/** Where names are resolved: on the resource, or inside `members[...]` / `meta[...]`. */
type Scope = { readonly parent?: AttributeDefinition };

const RESOURCE_SCOPE: Scope = {};
const TRUE: Predicate = { sql: NO_FILTER, joined: false };
const FALSE: Predicate = { sql: raw('FALSE'), joined: false };
const ORDERING: Readonly<Record<'gt' | 'ge' | 'lt' | 'le', string>> = { gt: '>', ge: '>=', lt: '<', le: '<=' };
const LIKE_PATTERNS: Readonly<Record<'co' | 'sw' | 'ew', (escaped: string) => string>> = {
  co: (v) => `%${v}%`,
  sw: (v) => `${v}%`,
  ew: (v) => `%${v}`,
};

/**
 * Compiles a filter to a parameterised SQL predicate over the resource's row, from the SQL its attribute
 * definitions give. Conditions on multi-valued attributes become their EXISTS subqueries; `not` is
 * `IS NOT TRUE`, a true complement even where SQL would yield NULL. `baseUrl` is the SCIM base URL, for
 * filters on references such as `meta.location`.
 */
export function compileFilter(resource: ResourceSchema, node: FilterNode, baseUrl: string): SqlFragment {
  return new FilterCompiler(resource, baseUrl).compile(node, RESOURCE_SCOPE).sql;
}

class FilterCompiler {
  constructor(
    private readonly resource: ResourceSchema,
    private readonly baseUrl: string,
  ) {}

  compile(node: FilterNode, scope: Scope): Predicate {
    switch (node.kind) {
      case 'and':
      case 'or': {
        const operands = node.operands.map((operand) => this.compile(operand, scope));
        const separator = node.kind === 'and' ? ' AND ' : ' OR ';
        return {
          sql: sql`(${joinSql(
            operands.map((o) => o.sql),
            separator,
          )})`,
          joined: operands.some((o) => o.joined),
          containing: combinedContaining(operands, node.kind),
        };
      }
      case 'not':
        return negate(this.compile(node.operand, scope));
      case 'valuePath':
        return this.valuePath(node.path, node.filter);
      case 'compare':
        if (node.value.kind === 'null' && (node.operator === 'eq' || node.operator === 'ne')) {
          // `eq null` asks for an absent value, `ne null` for a present one.
          const present = this.compile({ kind: 'present', path: node.path, position: node.position }, scope);
          return node.operator === 'ne' ? present : negate(present);
        }
        return this.leafPredicate(node, scope);
      case 'present':
        return this.leafPredicate(node, scope);
    }
  }

  private leafPredicate(node: Extract<FilterNode, { kind: 'present' | 'compare' }>, scope: Scope): Predicate {
    const attribute = this.resolve(node.path, scope);
    const predicate =
      node.kind === 'present' ? this.present(attribute) : this.compare(attribute, node.operator, node.value);
    if (scope.parent) return predicate;
    if (attribute.definition.multiValued) return exists(attribute.definition, predicate);
    return attribute.parent?.multiValued ? exists(attribute.parent, predicate) : predicate;
  }

  /** `members[...]`: every condition holds for the same member. `meta[...]`: conditions on meta. */
  private valuePath(path: AttributePath, filter: FilterNode): Predicate {
    const attribute = this.resolve(path, RESOURCE_SCOPE);
    if (attribute.definition.type !== 'complex') {
      const complex = this.resource.attributes.filter((a) => a.type === 'complex').map((a) => a.name);
      throw invalidFilter(
        `'${path.text}' at position ${path.position} is not a complex attribute; '[...]' applies to ${listed(complex)}`,
      );
    }
    const inner = this.compile(filter, { parent: attribute.definition });
    return attribute.definition.multiValued ? exists(attribute.definition, inner) : inner;
  }

  private resolve(path: AttributePath, scope: Scope): ResolvedAttribute {
    const resolved = scope.parent ? resolveSubAttribute(scope.parent, path) : resolveAttribute(this.resource, path);
    if (!resolved) {
      const where = scope.parent ? ` inside '${scope.parent.name}[...]'` : '';
      throw invalidFilter(`Unknown attribute '${path.text}'${where} at position ${path.position}`);
    }
    return resolved;
  }

  /** `pr`: false for null, empty strings and empty arrays. */
  private present(attribute: ResolvedAttribute): Predicate {
    if (attribute.definition.type === 'complex') return TRUE; // multi-valued: wrapped in EXISTS; meta: always there
    const { expression, joined } = this.leaf(attribute);
    const test =
      attribute.definition.type === 'dateTime' || attribute.definition.type === 'boolean'
        ? sql`${expression} IS NOT NULL`
        : sql`(${expression} IS NOT NULL AND ${expression} <> '')`;
    return { sql: test, joined };
  }

  private compare(attribute: ResolvedAttribute, operator: CompareOperator, literal: Literal): Predicate {
    if (attribute.definition.type === 'complex') {
      const value = findAttribute(attribute.definition.subAttributes, 'value');
      if (!attribute.definition.multiValued || !value) {
        throw invalidFilter(
          `'${attribute.name}' is a complex attribute; compare one of its sub-attributes, such as ` +
            `${attribute.name}.${exampleSubAttribute(attribute.definition)}`,
        );
      }
      // `members eq "1"` means `members.value eq "1"` (RFC 7644 section 3.4.2.2; Entra and AWS send it).
      return this.compare(
        { name: `${attribute.name}.value`, definition: value, parent: attribute.definition },
        operator,
        literal,
      );
    }
    if (literal.kind === 'null') {
      throw invalidFilter(`Operator '${operator}' cannot compare with null at position ${literal.position}`);
    }
    if (attribute.definition.type === 'boolean') return this.compareBoolean(attribute, operator, literal);
    if (literal.kind === 'boolean' && operator in ORDERING) {
      throw invalidFilter(
        `Operator '${operator}' cannot compare the boolean ${literal.text} at position ${literal.position}`,
      );
    }
    if (literal.kind !== 'string') {
      const type = attribute.definition.type === 'dateTime' ? 'dateTime' : 'string';
      throw invalidFilter(
        `'${attribute.name}' is a ${type} attribute; the ${literal.kind} ${literal.text} at position ` +
          `${literal.position} cannot be compared with it, use a double-quoted string`,
      );
    }
    if (attribute.definition.type === 'dateTime')
      return this.compareDateTime(attribute, operator, literal.value, literal.position);
    const { equality, containing } = this.sqlOf(attribute);
    if (equality && (operator === 'eq' || operator === 'ne')) return compareKey(equality, operator, literal.value);
    const predicate = this.compareText(attribute, operator, literal.value);
    return containing && operator === 'eq' ? { ...predicate, containing: containing(literal.value) } : predicate;
  }

  /** Booleans take `eq` and `ne` with `true` or `false`, nothing else. */
  private compareBoolean(attribute: ResolvedAttribute, operator: CompareOperator, literal: Literal): Predicate {
    if (literal.kind !== 'boolean') {
      throw invalidFilter(
        `'${attribute.name}' is a boolean attribute; the ${literal.kind} ${literal.text} at position ` +
          `${literal.position} cannot be compared with it, use true or false`,
      );
    }
    if (operator !== 'eq' && operator !== 'ne') {
      throw invalidFilter(
        `Operator '${operator}' does not apply to the boolean attribute '${attribute.name}'; use eq or ne`,
      );
    }
    const { expression, joined } = this.leaf(attribute);
    return {
      sql: sql`${expression} ${raw(operator === 'eq' ? '=' : '<>')} ${raw(literal.value ? 'TRUE' : 'FALSE')}`,
      joined,
    };
  }

  private compareDateTime(
    attribute: ResolvedAttribute,
    operator: CompareOperator,
    value: string,
    position: number,
  ): Predicate {
    if (operator === 'co' || operator === 'sw' || operator === 'ew') {
      throw invalidFilter(`Operator '${operator}' does not apply to the dateTime attribute '${attribute.name}'`);
    }
    const instant = normaliseDateTime(value);
    if (!instant) {
      throw invalidFilter(
        `"${value}" at position ${position} is not a valid dateTime; expected a form like 2024-05-01T12:00:00Z ` +
          `or 2024-05-01T14:00:00+02:00`,
      );
    }
    const { expression, joined } = this.leaf(attribute);
    const symbol = operator === 'eq' ? '=' : operator === 'ne' ? '<>' : ORDERING[operator];
    return { sql: sql`${expression} ${raw(symbol)} ${instant}::timestamptz`, joined };
  }

  /** Strings: caseExact attributes compare as written, others case-insensitively; order is by code point. */
  private compareText(attribute: ResolvedAttribute, operator: CompareOperator, value: string): Predicate {
    const { expression, joined } = this.leaf(attribute);
    const caseExact = attribute.definition.caseExact;
    // Equality is bytewise in any deterministic collation, so only ordering and LIKE name one; this
    // keeps equality on the plain index expressions.
    const left = caseExact ? expression : folded(expression);
    const ordered = caseExact ? sql`${expression} COLLATE "C"` : left;
    const right = (text: string) => (caseExact ? sql`${text}` : folded(sql`${text}::text`));
    let test: SqlFragment;
    if (operator === 'eq' || operator === 'ne') {
      test = sql`${left} ${raw(operator === 'eq' ? '=' : '<>')} ${right(value)}`;
    } else if (operator === 'co' || operator === 'sw' || operator === 'ew') {
      test = sql`${ordered} LIKE ${right(LIKE_PATTERNS[operator](escapeLike(value)))} ESCAPE '\\'`;
    } else {
      test = sql`${ordered} ${raw(ORDERING[operator])} ${right(value)}`;
    }
    return { sql: test, joined };
  }

  private leaf(attribute: ResolvedAttribute): { expression: SqlFragment; joined: boolean } {
    const { expression, joined = false } = this.sqlOf(attribute);
    return { expression: expression(this.baseUrl), joined };
  }

  private sqlOf(attribute: ResolvedAttribute): AttributeSql {
    const definition = attribute.definition.sql;
    if (!definition) throw new Error(`No SQL expression for SCIM attribute ${attribute.name}`);
    return definition;
  }
}

/** True complement: SQL's NULL counts as "does not match". */
function negate(predicate: Predicate): Predicate {
  return { sql: sql`((${predicate.sql}) IS NOT TRUE)`, joined: predicate.joined };
}

/** The condition must hold for one value of the multi-valued attribute; an indexable prefilter goes first. */
function exists(attribute: AttributeDefinition, predicate: Predicate): Predicate {
  if (!attribute.exists) throw new Error(`No EXISTS subquery for the multi-valued SCIM attribute ${attribute.name}`);
  const subquery = attribute.exists(predicate.sql, predicate.joined);
  return { sql: predicate.containing ? sql`(${predicate.containing} AND ${subquery})` : subquery, joined: false };
}

/** `a and b` needs what either needs; `a or b` a prefilter only when both have one. `not` never has one. */
function combinedContaining(operands: readonly Predicate[], kind: 'and' | 'or'): SqlFragment | undefined {
  const found = operands.flatMap((o) => (o.containing ? [o.containing] : []));
  if (!found.length || (kind === 'or' && found.length < operands.length)) return undefined;
  return sql`(${joinSql(found, kind === 'and' ? ' AND ' : ' OR ')})`;
}

/** Keys compare exactly; text the key cannot hold matches no row, never a SQL error. */
function compareKey(equality: NonNullable<AttributeSql['equality']>, operator: 'eq' | 'ne', value: string): Predicate {
  const test = equality(operator === 'eq' ? '=' : '<>', value);
  if (!test) return operator === 'eq' ? FALSE : TRUE;
  return { sql: test, joined: false };
}

/** For error messages: a dateTime such as meta.lastModified, which delta queries filter on, else the first. */
function exampleSubAttribute(attribute: AttributeDefinition): string {
  const subs = attribute.subAttributes ?? [];
  return (subs.findLast((s) => s.type === 'dateTime') ?? subs[0])?.name ?? 'value';
}

/** `a`, `a and b`, `a, b and c`. */
function listed(names: readonly string[]): string {
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

/** Makes `%`, `_` and `\` match themselves in a LIKE pattern whose escape character is `\`. */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (char) => `\\${char}`);
}
