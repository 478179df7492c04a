// Catalog loading: flow.yaml → validated Catalog with built collection specs; reductions by schema.
export * from './types.ts';
export { loadCatalog, parseInterval, DEFAULT_INTERVAL_SECONDS } from './load.ts';
export { isValidName } from './catalog-file.ts';
export { collectionSpec, withMeta } from './collection-spec.ts';
export { catalogSchema } from './catalog-schema.ts';
export type { CatalogFile } from './catalog-schema.ts';
export { CatalogError, formatProblem } from './errors.ts';
export type { CatalogProblem } from './errors.ts';
export { reduceDocuments, combineByKey, createReducer, SUPPORTED_STRATEGIES } from './reduce.ts';
export type { Reducer } from './reduce.ts';
export { compileDocumentSchema, createAjv } from './ajv.ts';
export { buildProjections, inferenceAt } from './projections.ts';
export { shapeOf, locate } from './shape.ts';
export type { Shape } from './shape.ts';
