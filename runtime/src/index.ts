export * from './protocol/specs.ts';
export type * from './protocol/capture.ts';
export type * from './protocol/materialize.ts';
export type * from './connector/types.ts';
export * from './protocol/tuple.ts';
export * from './errors.ts';
