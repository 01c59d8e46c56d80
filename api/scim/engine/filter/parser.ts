import { invalidFilter } from '../errors';
import { COMPARE_OPERATORS, type AttributePath, type CompareOperator, type FilterNode, type Literal } from './ast';
import { parseAttributePath } from './attribute-path';
import { tokenize, type Token } from './tokenizer';

export const MAX_FILTER_BYTES = 4096;
export const MAX_FILTER_DEPTH = 64;

const OPERATORS = new Set<string>([...COMPARE_OPERATORS, 'pr']);
const LITERAL_WORDS: Readonly<Record<string, Literal['kind']>> = { true: 'boolean', false: 'boolean', null: 'null' };

/**
 * Parses a filter into its syntax tree. Precedence, tightest first: `[...]` and `(...)`, `not`, `and`,
 * `or`. Every syntax error is a 400 invalidFilter naming what is wrong and its position.
 */
export function parseFilter(filter: string): FilterNode {
  if (Buffer.byteLength(filter, 'utf8') > MAX_FILTER_BYTES) {
    throw invalidFilter(`The filter is longer than ${MAX_FILTER_BYTES} bytes`);
  }
  if (filter.trim() === '') throw invalidFilter('The filter is empty');
  return new FilterParser(tokenize(filter)).parse();
}

class FilterParser {
  private index = 0;
  private depth = 0;

  constructor(private readonly tokens: readonly Token[]) {}

  parse(): FilterNode {
    const node = this.parseOr(false);
    const next = this.peek();
    if (next.kind !== 'end') {
      const hint =
        next.kind === 'rparen' || next.kind === 'rbracket'
          ? 'it closes nothing'
          : "expected 'and', 'or' or the end of the filter";
      throw invalidFilter(`Unexpected ${describe(next)} at position ${next.position}: ${hint}`);
    }
    return node;
  }

  private parseOr(inValuePath: boolean): FilterNode {
    return this.parseLogical('or', () => this.parseAnd(inValuePath));
  }

  private parseAnd(inValuePath: boolean): FilterNode {
    return this.parseLogical('and', () => this.parseUnary(inValuePath));
  }

  private parseLogical(keyword: 'and' | 'or', operand: () => FilterNode): FilterNode {
    const first = operand();
    const operands = [first];
    while (this.isKeyword(this.peek(), keyword)) {
      this.index += 1;
      operands.push(operand());
    }
    return operands.length === 1 ? first : { kind: keyword, operands, position: first.position };
  }

  private parseUnary(inValuePath: boolean): FilterNode {
    const token = this.peek();
    if (this.isKeyword(token, 'not')) {
      this.index += 1;
      const open = this.peek();
      if (open.kind !== 'lparen') {
        throw invalidFilter(`Expected '(' after 'not' at position ${token.position}, found ${describe(open)}`);
      }
      return { kind: 'not', operand: this.parseGroup(inValuePath), position: token.position };
    }
    if (token.kind === 'lparen') return this.parseGroup(inValuePath);
    if (token.kind === 'word' && !this.isKeyword(token, 'and') && !this.isKeyword(token, 'or')) {
      return this.parseAttributeExpression(inValuePath);
    }
    throw invalidFilter(
      `Expected an attribute name, '(' or 'not' at position ${token.position}, found ${describe(token)}`,
    );
  }

  /** `( filter )`, with the opening parenthesis as the current token. */
  private parseGroup(inValuePath: boolean): FilterNode {
    const open = this.next();
    return this.nested(open, 'rparen', ')', () => this.parseOr(inValuePath));
  }

  private parseAttributeExpression(inValuePath: boolean): FilterNode {
    const token = this.next();
    const path = parseAttributePath(token.text, token.position);
    if (!path) throw invalidFilter(`'${token.text}' at position ${token.position} is not a valid attribute name`);
    const next = this.peek();
    if (next.kind === 'lbracket') {
      if (inValuePath) throw invalidFilter(`Nested value filters are not allowed: '[' at position ${next.position}`);
      this.index += 1;
      const filter = this.nested(next, 'rbracket', ']', () => this.parseOr(true));
      return { kind: 'valuePath', path, filter, position: path.position };
    }
    if (next.kind !== 'word') {
      throw invalidFilter(
        `Expected an operator after '${path.text}' at position ${next.position}, found ${describe(next)}`,
      );
    }
    const operator = next.text.toLowerCase();
    if (!OPERATORS.has(operator)) {
      throw invalidFilter(
        `Unknown operator '${next.text}' at position ${next.position}; expected one of ${[...OPERATORS].join(', ')}`,
      );
    }
    this.index += 1;
    if (operator === 'pr') return { kind: 'present', path, position: path.position };
    return {
      kind: 'compare',
      path,
      operator: operator as CompareOperator,
      value: this.parseLiteral(path, next),
      position: path.position,
    };
  }

  private parseLiteral(path: AttributePath, operator: Token): Literal {
    const token = this.next();
    const { text, position } = token;
    if (token.kind === 'string') return { kind: 'string', value: token.value as string, text, position };
    if (token.kind === 'number') return { kind: 'number', value: token.value as number, text, position };
    const word = token.kind === 'word' ? LITERAL_WORDS[text.toLowerCase()] : undefined;
    if (word === 'boolean') return { kind: 'boolean', value: text.toLowerCase() === 'true', text, position };
    if (word === 'null') return { kind: 'null', value: null, text, position };
    if (token.kind === 'word') {
      throw invalidFilter(
        `The value '${text}' at position ${position} must be a double-quoted string, a number, true, false or null`,
      );
    }
    throw invalidFilter(
      `Missing value after '${path.text} ${operator.text}' at position ${operator.position}: found ${describe(token)}`,
    );
  }

  /** Parses the inside of a bracket pair, enforcing the nesting limit and the closing token. */
  private nested(open: Token, close: Token['kind'], closeText: string, inner: () => FilterNode): FilterNode {
    this.depth += 1;
    if (this.depth > MAX_FILTER_DEPTH) {
      throw invalidFilter(
        `The filter is nested more than ${MAX_FILTER_DEPTH} levels deep at position ${open.position}`,
      );
    }
    const node = inner();
    const end = this.peek();
    if (end.kind !== close) {
      throw invalidFilter(
        `Missing '${closeText}' to close '${open.text}' at position ${open.position}: found ${describe(end)} ` +
          `at position ${end.position}`,
      );
    }
    this.index += 1;
    this.depth -= 1;
    return node;
  }

  private isKeyword(token: Token, keyword: string): boolean {
    return token.kind === 'word' && token.text.toLowerCase() === keyword;
  }

  private peek(): Token {
    return this.tokens[this.index];
  }

  private next(): Token {
    const token = this.tokens[this.index];
    if (token.kind !== 'end') this.index += 1;
    return token;
  }
}

function describe(token: Token): string {
  if (token.kind === 'end') return 'the end of the filter';
  const text = token.text.length > 40 ? `${token.text.slice(0, 40)}...` : token.text;
  return `'${text}'`;
}
