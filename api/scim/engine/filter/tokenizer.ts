import { invalidFilter } from '../errors';

export type TokenKind = 'lparen' | 'rparen' | 'lbracket' | 'rbracket' | 'string' | 'number' | 'word' | 'end';

export interface Token {
  readonly kind: TokenKind;
  /** The token as written in the filter. */
  readonly text: string;
  /** 1-based character position of the token's first character. */
  readonly position: number;
  /** Decoded value of a string literal, or the value of a number. */
  readonly value?: string | number;
}

const PUNCTUATION: Readonly<Record<string, TokenKind>> = {
  '(': 'lparen',
  ')': 'rparen',
  '[': 'lbracket',
  ']': 'rbracket',
};
// Attribute paths (with URN prefixes and sub-attributes), operators, keywords and true/false/null.
const WORD = /[A-Za-z_$][A-Za-z0-9_$:.-]*/y;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const WHITESPACE = /[ \t\r\n]+/y;
// A number must not run straight into a name or another fraction: `1abc`, `1.2.3`.
const NUMBER_TAIL = /[A-Za-z0-9_$.]/;
const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

/** Splits a SCIM filter into tokens; string literals follow JSON (RFC 8259 section 7). */
export function tokenize(filter: string): Token[] {
  const tokens: Token[] = [];
  let index = 0;
  const matchAt = (pattern: RegExp): string | undefined => {
    pattern.lastIndex = index;
    return pattern.exec(filter)?.[0];
  };
  while (index < filter.length) {
    const char = filter[index];
    const position = index + 1;
    const space = matchAt(WHITESPACE);
    if (space) {
      index += space.length;
    } else if (PUNCTUATION[char]) {
      tokens.push({ kind: PUNCTUATION[char], text: char, position });
      index += 1;
    } else if (char === '"') {
      const { value, end } = readString(filter, index);
      tokens.push({ kind: 'string', text: filter.slice(index, end), position, value });
      index = end;
    } else if (char === "'") {
      throw invalidFilter(`Single quotes are not allowed at position ${position}; quote strings with double quotes`);
    } else {
      const number = char === '-' || (char >= '0' && char <= '9') ? matchAt(NUMBER) : undefined;
      const word = number === undefined ? matchAt(WORD) : undefined;
      const text = number ?? word;
      if (!text) {
        const found = String.fromCodePoint(filter.codePointAt(index)!);
        throw invalidFilter(`Unexpected character ${describeChar(found)} at position ${position}`);
      }
      if (number !== undefined && NUMBER_TAIL.test(filter[index + number.length] ?? '')) {
        throw invalidFilter(`Malformed number at position ${position}`);
      }
      tokens.push(
        number !== undefined
          ? { kind: 'number', text, position, value: Number(number) }
          : { kind: 'word', text, position },
      );
      index += text.length;
    }
  }
  tokens.push({ kind: 'end', text: '', position: filter.length + 1 });
  return tokens;
}

/** Reads the JSON string literal that starts at `start` (a double quote). */
function readString(filter: string, start: number): { value: string; end: number } {
  let value = '';
  let index = start + 1;
  while (index < filter.length) {
    const char = filter[index];
    if (char === '"') return { value, end: index + 1 };
    if (char === '\\') {
      const escape = filter[index + 1];
      if (escape === 'u') {
        const hex = filter.slice(index + 2, index + 6);
        if (!/^[0-9A-Fa-f]{4}$/.test(hex)) {
          throw invalidFilter(`Invalid \\u escape at position ${index + 1}: expected four hexadecimal digits`);
        }
        const code = parseInt(hex, 16);
        if (code === 0) throw invalidFilter(`The NUL character (\\u0000) at position ${index + 1} is not allowed`);
        value += String.fromCharCode(code);
        index += 6;
      } else if (escape !== undefined && SIMPLE_ESCAPES[escape]) {
        value += SIMPLE_ESCAPES[escape];
        index += 2;
      } else {
        throw invalidFilter(`Invalid escape ${escape === undefined ? '\\' : `\\${escape}`} at position ${index + 1}`);
      }
    } else if (char < ' ') {
      throw invalidFilter(
        `Control character ${describeChar(char)} at position ${index + 1} must be escaped inside a string`,
      );
    } else {
      value += char;
      index += 1;
    }
  }
  throw invalidFilter(`Unterminated string starting at position ${start + 1}`);
}

function describeChar(char: string): string {
  const code = char.codePointAt(0)!;
  return code < 0x20 || code === 0x7f ? `U+${code.toString(16).toUpperCase().padStart(4, '0')}` : `'${char}'`;
}
