/** A piece of parameterised SQL with knex-style `?` placeholders and their values, in order. */
export interface SqlFragment {
  readonly sql: string;
  readonly bindings: readonly SqlValue[];
}

export type SqlValue = string | number;

const isFragment = (value: SqlFragment | SqlValue): value is SqlFragment => typeof value === 'object';

/**
 * Builds SQL from a template: embedded fragments are spliced in with their bindings, every other value
 * becomes a `?` placeholder. Literal text comes only from the source code, never from requests.
 */
export function sql(strings: TemplateStringsArray, ...values: ReadonlyArray<SqlFragment | SqlValue>): SqlFragment {
  let text = strings[0];
  const bindings: SqlValue[] = [];
  values.forEach((value, i) => {
    if (isFragment(value)) {
      text += value.sql;
      bindings.push(...value.bindings);
    } else {
      text += '?';
      bindings.push(value);
    }
    text += strings[i + 1];
  });
  return { sql: text, bindings };
}

/** Trusted SQL text from the source code. */
export const raw = (text: string): SqlFragment => ({ sql: text, bindings: [] });

export function joinSql(fragments: readonly SqlFragment[], separator: string): SqlFragment {
  return {
    sql: fragments.map((f) => f.sql).join(separator),
    bindings: fragments.flatMap((f) => f.bindings),
  };
}
