#!/usr/bin/env node
// materialize-sqlite: the materialize protocol on stdin/stdout, writing into an embedded SQLite file.
// Plain JavaScript so any Node starts it: on one older than 24 the launcher re-executes it on the pinned Node 24.
// @ts-check
import { runOnSupportedNode } from '@sluice/runtime/launch';

await runOnSupportedNode(import.meta.url);
const { runMaterializeMain } = await import('@sluice/runtime');
const { materializeSqlite } = await import('../src/connector.ts');

await runMaterializeMain(materializeSqlite);
