// @sluice/materialize-sql: the shared SQL materialization core (library, no bin).
// A SQL connector supplies a Dialect (pure SQL rendering), a Client (I/O) and a SqlEndpoint (config → paths,
// options); sqlMaterializeConnector() turns them into a MaterializeConnector for serveMaterialize().
export type * from './dialect.ts';
export { makeQuoter, stringLiteral } from './dialect.ts';
export type * from './client.ts';
export { inTransaction } from './client.ts';
export type * from './table.ts';
export { buildColumn, buildTable, flatTypeOf, isNullable, parseExistingColumns } from './table.ts';
export * from './errors.ts';
export { chooseDocumentField, isRootProjection, validateBinding } from './validate.ts';
export type { ValidateBindingInput } from './validate.ts';
export { describeTable, planApply, planTable, runApply } from './apply.ts';
export type { ApplyBinding, ApplyPlanInput } from './apply.ts';
export { commitCheckpoint, installFence } from './fence.ts';
export { EXPLICIT_ZERO_CHECKPOINT, checkpointFromText, checkpointToText, decodeCheckpoint, encodeCheckpoint } from './checkpoint.ts';
export type { Fence, FenceSpec } from './fence.ts';
export { FLOW_DELETE_COLUMN, SqlTransactor } from './transactor.ts';
export type { SqlTransactorOptions } from './transactor.ts';
export { estimateRowBytes, stageByBinding } from './staged.ts';
export type { BindingStaging, Routed, SpillOptions, StageOptions, StagingStats } from './staged.ts';
export { sqlMaterializeConnector } from './materialization.ts';
export type { SqlEndpoint } from './materialization.ts';
