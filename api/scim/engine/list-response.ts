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
