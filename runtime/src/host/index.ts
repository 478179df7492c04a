// Host side: spawn a connector and drive its RPCs. `@sluice/runtime/host`.
export * from './connector-log.ts';
export * from './connector-process.ts';
export * from './materialize-driver.ts';
export * from './capture-driver.ts';
export * from './captured-bytes.ts';
export { groupAlive, killAllGroups, stopAllGroups } from './process-group.ts';
