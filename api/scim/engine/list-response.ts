import { LIST_RESPONSE_URN } from './urns';

/** RFC 7644 section 3.4.2 list envelope; counts are JSON integers. */
export function listResponse(resources: readonly unknown[], totalResults: number, startIndex: number) {
  return {
    schemas: [LIST_RESPONSE_URN],
    totalResults,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}

/**
 * The same envelope as text around resources that are JSON text already (a rendered page): byte for byte what
 * JSON.stringify(listResponse(...)) gives for those resources.
 */
export function listResponseText(resources: readonly string[], totalResults: number, startIndex: number): string {
  const empty = JSON.stringify({ ...listResponse([], totalResults, startIndex), itemsPerPage: resources.length });
  // The envelope ends with its empty Resources array: `[]}`.
  return `${empty.slice(0, -2)}${resources.join(',')}]}`;
}
