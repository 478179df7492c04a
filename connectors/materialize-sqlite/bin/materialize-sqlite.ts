#!/usr/bin/env node
// materialize-sqlite: the materialize protocol on stdin/stdout, writing into an embedded SQLite file.
import { runMaterializeMain } from '@sluice/runtime';
import { materializeSqlite } from '../src/connector.ts';
import { prestartWriterThread } from '../src/writer-thread.ts';

prestartWriterThread();
await runMaterializeMain(materializeSqlite);
