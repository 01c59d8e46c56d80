/** The syntax tree of a SCIM filter (RFC 7644 section 3.4.2.2). Positions are 1-based characters. */

export const COMPARE_OPERATORS = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le'] as const;
export type CompareOperator = (typeof COMPARE_OPERATORS)[number];

/** `[uri:]attribute[.subAttribute]`, as written; names are resolved against the schema later. */
export interface AttributePath {
  readonly uri?: string;
  readonly attribute: string;
  readonly subAttribute?: string;
  readonly text: string;
  readonly position: number;
}

export type Literal =
  | { readonly kind: 'string'; readonly value: string; readonly text: string; readonly position: number }
  | { readonly kind: 'number'; readonly value: number; readonly text: string; readonly position: number }
  | { readonly kind: 'boolean'; readonly value: boolean; readonly text: string; readonly position: number }
  | { readonly kind: 'null'; readonly value: null; readonly text: string; readonly position: number };

export type FilterNode =
  | { readonly kind: 'and' | 'or'; readonly operands: readonly FilterNode[]; readonly position: number }
  | { readonly kind: 'not'; readonly operand: FilterNode; readonly position: number }
  | {
      readonly kind: 'compare';
      readonly path: AttributePath;
      readonly operator: CompareOperator;
      readonly value: Literal;
      readonly position: number;
    }
  | { readonly kind: 'present'; readonly path: AttributePath; readonly position: number }
  | {
      readonly kind: 'valuePath';
      readonly path: AttributePath;
      readonly filter: FilterNode;
      readonly position: number;
    };
