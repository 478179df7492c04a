#!/usr/bin/env node
// The runtime's test capture connector as a process: `printf '{"spec":{}}\n' | npx sluice-test-capture`.
import { runCaptureMain } from '../src/connector/main.ts';
import { createTestCapture } from '../src/testing/test-capture.ts';

await runCaptureMain(createTestCapture({ explicitAcks: process.env['TEST_EXPLICIT_ACKS'] === '1' }));
