// Test connectors for runtime, CLI and plane tests: `@sluice/runtime/testing`.
export * from './test-capture.ts';
export * from './test-materialize.ts';
export * from './until.ts';
export * from './processes.ts';
export * from './line-session.ts';
