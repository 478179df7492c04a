#!/usr/bin/env node
// The runtime's test materialization connector as a process: `printf '{"spec":{}}\n' | npx sluice-test-materialize`.
import { runMaterializeMain } from '../src/connector/main.ts';
import { createTestMaterialize } from '../src/testing/test-materialize.ts';

await runMaterializeMain(createTestMaterialize());
