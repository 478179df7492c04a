// @sluice/materialize-sql: the shared SQL materialization core (library, no bin).
export type * from './dialect.ts';
export { makeQuoter, stringLiteral } from './dialect.ts';
export type * from './client.ts';
export { inTransaction } from './client.ts';
export type * from './table.ts';
export { buildColumn, buildTable, flatTypeOf, isNullable, parseExistingColumns } from './table.ts';
export * from './errors.ts';
