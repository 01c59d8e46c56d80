export * from './envelope';
export * from './payloads';
export { alpha2Field, dateField, datetimeField, urlField } from './fields';
