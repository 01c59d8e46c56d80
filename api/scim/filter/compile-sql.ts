import { invalidFilter } from '../errors';
import { findAttribute, type AttributeDefinition } from '../group-schema';
import { isGroupId } from '../group-queries';
import { folded, GROUP_VERSION, MEMBER_DISPLAY, MEMBER_JOINS } from '../group-sql';
import { groupLocationSql, memberReferenceSql } from '../locations';
import { resolveGroupAttribute, resolveSubAttribute, type ResolvedAttribute } from '../resolve-attribute';
import { joinSql, raw, sql, type SqlFragment } from '../sql-fragment';
import type { AttributePath, CompareOperator, FilterNode, Literal } from './ast';
import { normaliseDateTime } from './datetime';

/** A predicate and whether it reads the member's display (and so needs the user and group joins). */
interface Predicate {
  readonly sql: SqlFragment;
  readonly needsMemberJoins: boolean;
}

/** Where names are resolved: on the group, or inside `members[...]` / `meta[...]`. */
type Scope = { readonly parent?: AttributeDefinition };

const GROUP_SCOPE: Scope = {};
const TRUE: Predicate = { sql: raw('TRUE'), needsMemberJoins: false };
const FALSE: Predicate = { sql: raw('FALSE'), needsMemberJoins: false };
const ORDERING: Readonly<Record<'gt' | 'ge' | 'lt' | 'le', string>> = { gt: '>', ge: '>=', lt: '<', le: '<=' };
const LIKE_PATTERNS: Readonly<Record<'co' | 'sw' | 'ew', (escaped: string) => string>> = {
  co: (v) => `%${v}%`,
  sw: (v) => `${v}%`,
  ew: (v) => `%${v}`,
};

/** SQL for each filterable leaf attribute; `g` is the group row, `m` the member row. */
const LEAF_EXPRESSIONS: Readonly<Record<string, (baseUrl: string) => SqlFragment>> = {
  id: () => raw('g.id::text'),
  // An empty externalId is served as absent, so filters treat it as absent too.
  externalId: () => raw("NULLIF(g.external_id, '')"),
  displayName: () => raw('g.display_name'),
  'meta.resourceType': () => sql`${'Group'}::text`,
  'meta.created': () => raw('g.created'),
  'meta.lastModified': () => raw('g.last_modified'),
  'meta.location': groupLocationSql,
  'meta.version': () => GROUP_VERSION,
  'members.value': () => raw('m.value'),
  'members.display': () => MEMBER_DISPLAY,
  'members.type': () => raw('m.type'),
  'members.$ref': memberReferenceSql,
};

/**
 * Compiles a filter to a parameterised SQL predicate over `scim_groups g`. Member conditions become
 * EXISTS subqueries; `not` is `IS NOT TRUE`, a true complement even where SQL would yield NULL.
 * `baseUrl` is the SCIM base URL, for filters on `meta.location` and `members.$ref`.
 */
export function compileFilter(node: FilterNode, baseUrl: string): SqlFragment {
  return new FilterCompiler(baseUrl).compile(node, GROUP_SCOPE).sql;
}

class FilterCompiler {
  constructor(private readonly baseUrl: string) {}

  compile(node: FilterNode, scope: Scope): Predicate {
    switch (node.kind) {
      case 'and':
      case 'or': {
        const operands = node.operands.map((operand) => this.compile(operand, scope));
        return {
          sql: sql`(${joinSql(operands.map((o) => o.sql), node.kind === 'and' ? ' AND ' : ' OR ')})`,
          needsMemberJoins: operands.some((o) => o.needsMemberJoins),
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
    const predicate = node.kind === 'present'
      ? this.present(attribute)
      : this.compare(attribute, node.operator, node.value);
    return isMemberAttribute(attribute) && !scope.parent ? memberExists(predicate) : predicate;
  }

  /** `members[...]`: every condition holds for the same member. `meta[...]`: conditions on meta. */
  private valuePath(path: AttributePath, filter: FilterNode): Predicate {
    const attribute = this.resolve(path, GROUP_SCOPE);
    if (attribute.definition.type !== 'complex') {
      throw invalidFilter(
        `'${path.text}' at position ${path.position} is not a complex attribute; '[...]' applies to members and meta`,
      );
    }
    const inner = this.compile(filter, { parent: attribute.definition });
    return attribute.definition.multiValued ? memberExists(inner) : inner;
  }

  private resolve(path: AttributePath, scope: Scope): ResolvedAttribute {
    const resolved = scope.parent ? resolveSubAttribute(scope.parent, path) : resolveGroupAttribute(path);
    if (!resolved) {
      const where = scope.parent ? ` inside '${scope.parent.name}[...]'` : '';
      throw invalidFilter(`Unknown attribute '${path.text}'${where} at position ${path.position}`);
    }
    return resolved;
  }

  /** `pr`: false for null, empty strings and empty arrays. */
  private present(attribute: ResolvedAttribute): Predicate {
    if (attribute.definition.type === 'complex') return TRUE; // members: wrapped in EXISTS; meta: always there
    const { expression, needsMemberJoins } = this.leaf(attribute);
    const test = attribute.definition.type === 'dateTime'
      ? sql`${expression} IS NOT NULL`
      : sql`(${expression} IS NOT NULL AND ${expression} <> '')`;
    return { sql: test, needsMemberJoins };
  }

  private compare(attribute: ResolvedAttribute, operator: CompareOperator, literal: Literal): Predicate {
    if (attribute.definition.type === 'complex') {
      const value = findAttribute(attribute.definition.subAttributes, 'value');
      if (!attribute.definition.multiValued || !value) {
        throw invalidFilter(
          `'${attribute.name}' is a complex attribute; compare one of its sub-attributes, such as ${attribute.name}.lastModified`,
        );
      }
      // `members eq "1"` means `members.value eq "1"` (RFC 7644 section 3.4.2.2; Entra and AWS send it).
      return this.compare({ name: `${attribute.name}.value`, definition: value, parent: attribute.definition }, operator, literal);
    }
    if (literal.kind === 'null') {
      throw invalidFilter(`Operator '${operator}' cannot compare with null at position ${literal.position}`);
    }
    if (literal.kind === 'boolean' && operator in ORDERING) {
      throw invalidFilter(`Operator '${operator}' cannot compare the boolean ${literal.text} at position ${literal.position}`);
    }
    if (literal.kind !== 'string') {
      const type = attribute.definition.type === 'dateTime' ? 'dateTime' : 'string';
      throw invalidFilter(
        `'${attribute.name}' is a ${type} attribute; the ${literal.kind} ${literal.text} at position ${literal.position} cannot be compared with it, use a double-quoted string`,
      );
    }
    if (attribute.definition.type === 'dateTime') return this.compareDateTime(attribute, operator, literal.value, literal.position);
    if (attribute.name === 'id' && (operator === 'eq' || operator === 'ne')) return compareId(operator, literal.value);
    return this.compareText(attribute, operator, literal.value);
  }

  private compareDateTime(attribute: ResolvedAttribute, operator: CompareOperator, value: string, position: number): Predicate {
    if (operator === 'co' || operator === 'sw' || operator === 'ew') {
      throw invalidFilter(`Operator '${operator}' does not apply to the dateTime attribute '${attribute.name}'`);
    }
    const instant = normaliseDateTime(value);
    if (!instant) {
      throw invalidFilter(
        `"${value}" at position ${position} is not a valid dateTime; expected a form like 2024-05-01T12:00:00Z or 2024-05-01T14:00:00+02:00`,
      );
    }
    const { expression } = this.leaf(attribute);
    const symbol = operator === 'eq' ? '=' : operator === 'ne' ? '<>' : ORDERING[operator];
    return { sql: sql`${expression} ${raw(symbol)} ${instant}::timestamptz`, needsMemberJoins: false };
  }

  /** Strings: caseExact attributes compare as written, others case-insensitively; order is by code point. */
  private compareText(attribute: ResolvedAttribute, operator: CompareOperator, value: string): Predicate {
    const { expression, needsMemberJoins } = this.leaf(attribute);
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
    return { sql: test, needsMemberJoins };
  }

  private leaf(attribute: ResolvedAttribute): { expression: SqlFragment; needsMemberJoins: boolean } {
    const build = LEAF_EXPRESSIONS[attribute.name];
    if (!build) throw new Error(`No SQL expression for SCIM attribute ${attribute.name}`);
    return { expression: build(this.baseUrl), needsMemberJoins: attribute.name === 'members.display' };
  }
}

function isMemberAttribute(attribute: ResolvedAttribute): boolean {
  return attribute.definition.multiValued || attribute.parent?.multiValued === true;
}

/** True complement: SQL's NULL counts as "does not match". */
function negate(predicate: Predicate): Predicate {
  return { sql: sql`((${predicate.sql}) IS NOT TRUE)`, needsMemberJoins: predicate.needsMemberJoins };
}

function memberExists(predicate: Predicate): Predicate {
  const joins = predicate.needsMemberJoins ? sql` ${MEMBER_JOINS}` : raw('');
  return {
    sql: sql`EXISTS (SELECT 1 FROM scim_group_members m${joins} WHERE m.group_id = g.id AND ${predicate.sql})`,
    needsMemberJoins: false,
  };
}

/** ids are lowercase UUIDs compared exactly; any other text matches no group, never a SQL error. */
function compareId(operator: 'eq' | 'ne', value: string): Predicate {
  if (!isGroupId(value)) return operator === 'eq' ? FALSE : TRUE;
  return { sql: sql`g.id ${raw(operator === 'eq' ? '=' : '<>')} ${value}::uuid`, needsMemberJoins: false };
}

/** Makes `%`, `_` and `\` match themselves in a LIKE pattern whose escape character is `\`. */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (char) => `\\${char}`);
}
