#!/usr/bin/env node
// The runtime's test materialization connector as a process: `printf '{"spec":{}}\n' | npx sluice-test-materialize`.
// Plain JavaScript so any Node starts it (the launcher re-executes it on the pinned Node 24 when needed).
// @ts-check
import { runOnSupportedNode } from '../src/launch.js';

await runOnSupportedNode(import.meta.url);
const { runMaterializeMain } = await import('../src/connector/main.ts');
const { createTestMaterialize } = await import('../src/testing/test-materialize.ts');

await runMaterializeMain(createTestMaterialize());
