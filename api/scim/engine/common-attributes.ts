import { attribute, columnSql, type AttributeDefinition, type AttributeSql } from './attributes';
import { resourceLocationSql } from './locations';
import { sql, type SqlFragment } from '../../../db/sql';

/** Where a resource keeps the common attributes (RFC 7643 section 3.1), as SQL on its row. */
export interface CommonAttributeSql {
  /** The resource type: meta.resourceType, and meta.location's path. */
  readonly name: string;
  readonly endpoint: string;
  /** `expression` is the id as text; `equality` compares with the key column, so ids stay caseExact. */
  readonly id: Required<Pick<AttributeSql, 'expression' | 'equality'>>;
  /** Absent for a resource type with no externalId (Users: the directory keeps none). */
  readonly externalId?: SqlFragment;
  readonly created: SqlFragment;
  readonly lastModified: SqlFragment;
  readonly version: SqlFragment;
}

export interface CommonAttributes {
  readonly id: AttributeDefinition;
  readonly externalId?: AttributeDefinition;
  readonly meta: AttributeDefinition;
}

/** id, externalId and meta, the same for every resource type but for their SQL. */
export function commonAttributes(common: CommonAttributeSql & { externalId: SqlFragment }): Required<CommonAttributes>;
export function commonAttributes(common: CommonAttributeSql): CommonAttributes;
export function commonAttributes(common: CommonAttributeSql): CommonAttributes {
  const { name, endpoint, id } = common;
  return {
    id: attribute('id', 'string', `Unique identifier of the ${name}, assigned by the service provider.`, {
      caseExact: true,
      required: true,
      returned: 'always',
      common: true,
      sql: id,
    }),
    ...(common.externalId && {
      externalId: attribute('externalId', 'string', `Identifier of the ${name} in the provisioning client.`, {
        caseExact: true,
        common: true,
        sql: columnSql(common.externalId),
      }),
    }),
    meta: attribute('meta', 'complex', 'Resource metadata.', {
      common: true,
      subAttributes: [
        attribute('resourceType', 'string', `The resource type, always ${name}.`, {
          caseExact: true,
          sql: { expression: () => sql`${name}::text` },
        }),
        attribute('created', 'dateTime', `When the ${name} was added to the directory.`, {
          sql: columnSql(common.created),
        }),
        attribute('lastModified', 'dateTime', `When the ${name} was last changed.`, {
          sql: columnSql(common.lastModified),
        }),
        attribute('location', 'reference', `The URI of this ${name}.`, {
          caseExact: true,
          referenceTypes: ['uri'],
          sql: { expression: (baseUrl) => resourceLocationSql(baseUrl, endpoint, id.expression(baseUrl)) },
        }),
        attribute('version', 'string', `Weak entity tag of the current version of the ${name}.`, {
          caseExact: true,
          sql: columnSql(common.version),
        }),
      ],
    }),
  };
}
