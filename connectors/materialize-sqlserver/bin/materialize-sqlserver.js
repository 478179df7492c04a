#!/usr/bin/env node
// The materialize-sqlserver connector as a process: speaks the Flow materialize protocol (JSON) on stdin/stdout.
// Plain JavaScript so any Node starts it: on one older than 24 the launcher re-executes it on the pinned Node 24.
// @ts-check
import { runOnSupportedNode } from '@sluice/runtime/launch';

await runOnSupportedNode(import.meta.url);
const { runMaterializeMain } = await import('@sluice/runtime');
const { createSqlServerConnector } = await import('../src/connector.ts');

await runMaterializeMain(createSqlServerConnector());
