#!/usr/bin/env node
// The materialize-sqlserver connector as a process: speaks the Flow materialize protocol (JSON) on stdin/stdout.
import { runMaterializeMain } from '@sluice/runtime';
import { createSqlServerConnector } from '../src/connector.ts';

await runMaterializeMain(createSqlServerConnector());
