import type { AttributePath } from './ast';

const NAME = /^(?:[A-Za-z][A-Za-z0-9_-]*|\$ref)$/;

/**
 * Reads `[uri:]attribute[.subAttribute]` (RFC 7644 section 3.10). Returns undefined when `text` is not
 * an attribute path; whether the names exist is decided against the schema, not here.
 */
export function parseAttributePath(text: string, position = 1): AttributePath | undefined {
  let uri: string | undefined;
  let rest = text;
  if (/^urn:/i.test(text)) {
    const colon = text.lastIndexOf(':');
    uri = text.slice(0, colon);
    rest = text.slice(colon + 1);
  }
  const parts = rest.split('.');
  if (parts.length > 2 || !parts.every((part) => NAME.test(part))) return undefined;
  return { uri, attribute: parts[0], subAttribute: parts[1], text, position };
}
