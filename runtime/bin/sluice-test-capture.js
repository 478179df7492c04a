#!/usr/bin/env node
// The runtime's test capture connector as a process: `printf '{"spec":{}}\n' | npx sluice-test-capture`.
// Plain JavaScript so any Node starts it (the launcher re-executes it on the pinned Node 24 when needed).
// @ts-check
import { runOnSupportedNode } from '../src/launch.js';

await runOnSupportedNode(import.meta.url);
const { runCaptureMain } = await import('../src/connector/main.ts');
const { createTestCapture } = await import('../src/testing/test-capture.ts');

await runCaptureMain(createTestCapture({ explicitAcks: process.env['TEST_EXPLICIT_ACKS'] === '1' }));
