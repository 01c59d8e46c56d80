import { ERROR_URN } from './urns';

/** RFC 7644 section 3.12 detail error keywords this service uses. */
export type ScimErrorType = 'invalidFilter' | 'invalidValue' | 'invalidSyntax' | 'tooMany';

/** An error that answers in the SCIM error format; thrown anywhere below the SCIM router. */
export class ScimError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly scimType?: ScimErrorType,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail);
    this.name = 'ScimError';
  }
}

export interface ScimErrorBody {
  readonly schemas: readonly string[];
  readonly status: string;
  readonly scimType?: ScimErrorType;
  readonly detail: string;
}

/** The error body; `status` is a string, as RFC 7644 section 3.12 requires. */
export function scimErrorBody(status: number, detail: string, scimType?: ScimErrorType): ScimErrorBody {
  return { schemas: [ERROR_URN], status: String(status), ...(scimType ? { scimType } : {}), detail };
}

export const invalidFilter = (detail: string) => new ScimError(400, detail, 'invalidFilter');
export const invalidValue = (detail: string) => new ScimError(400, detail, 'invalidValue');
