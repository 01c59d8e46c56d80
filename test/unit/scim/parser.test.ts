import assert from 'node:assert/strict';
import type { FilterNode } from '../../../api/scim/engine/filter/ast';
import { parseFilter } from '../../../api/scim/engine/filter/parser';

/** Renders a syntax tree compactly: operators prefix, paths and values as written. */
function show(node: FilterNode): string {
  switch (node.kind) {
    case 'and':
    case 'or':
      return `${node.kind}(${node.operands.map(show).join(', ')})`;
    case 'not':
      return `not(${show(node.operand)})`;
    case 'valuePath':
      return `${node.path.text}[${show(node.filter)}]`;
    case 'present':
      return `${node.path.text} pr`;
    case 'compare':
      return `${node.path.text} ${node.operator} ${node.value.text}`;
  }
}

describe('SCIM filter parser: syntax tree and positions', () => {
  for (const [filter, tree] of [
    ['a eq "1" or b eq "2" and c eq "3"', 'or(a eq "1", and(b eq "2", c eq "3"))'],
    ['a eq "1" and b eq "2" or c eq "3"', 'or(and(a eq "1", b eq "2"), c eq "3")'],
    ['(a eq "1" or b eq "2") and c eq "3"', 'and(or(a eq "1", b eq "2"), c eq "3")'],
    ['not (a pr) and b pr', 'and(not(a pr), b pr)'],
    ['not(a pr or b pr)', 'not(or(a pr, b pr))'],
    ['a pr and b pr and c pr', 'and(a pr, b pr, c pr)'],
    ['members[value eq "1" or type eq "User"] and x pr', 'and(members[or(value eq "1", type eq "User")], x pr)'],
    ['A EQ true OR B Ne null', 'or(A eq true, B ne null)'],
    ['x gt -1.5e3', 'x gt -1.5e3'],
  ] as const) {
    it(`${filter}  →  ${tree}`, () => {
      assert.equal(show(parseFilter(filter)), tree);
    });
  }

  it('keeps 1-based positions of paths and values, and splits URN-qualified paths', () => {
    const node = parseFilter(
      'displayName eq "x" and urn:ietf:params:scim:schemas:core:2.0:Group:members.value eq "\\u00e9"',
    );
    assert.equal(node.kind, 'and');
    const [first, second] = node.kind === 'and' ? node.operands : [];
    assert.deepEqual(first, {
      kind: 'compare',
      operator: 'eq',
      position: 1,
      path: { uri: undefined, attribute: 'displayName', subAttribute: undefined, text: 'displayName', position: 1 },
      value: { kind: 'string', value: 'x', text: '"x"', position: 16 },
    });
    assert.equal(second.kind, 'compare');
    if (second.kind === 'compare') {
      assert.equal(second.position, 24);
      assert.deepEqual(second.path, {
        uri: 'urn:ietf:params:scim:schemas:core:2.0:Group',
        attribute: 'members',
        subAttribute: 'value',
        text: 'urn:ietf:params:scim:schemas:core:2.0:Group:members.value',
        position: 24,
      });
      assert.deepEqual(second.value, { kind: 'string', value: 'é', text: '"\\u00e9"', position: 85 });
    }
  });
});
