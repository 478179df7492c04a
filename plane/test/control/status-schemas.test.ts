// The status schemas are written once (src/control/status-schemas.ts); schemas/api/<Name>.json of each is
// generated from it (UPDATE_SNAPSHOTS=1 rewrites them), and the control store's types are derived from it: the
// type assertions below fail the typecheck when a derived type stops saying what the schema says.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { statusSchemaFile, statusSchemas, type StatusSchemaName } from '../../src/control/status-schemas.ts';
import type { ActivationState, AlertState, PublicationInfo, ShardRef } from '../../src/control/live-spec.ts';
import type { JobStatusType } from '../../src/control/recorder.ts';
import type { SummaryStatus } from '../../src/control/status.ts';

test('schemas/api/*.json of the status resources are generated from src/control/status-schemas.ts', () => {
  for (const name of Object.keys(statusSchemas.$defs) as StatusSchemaName[]) {
    const file = new URL(`../../../schemas/api/${name}.json`, import.meta.url).pathname;
    const text = statusSchemaFile(name);
    if (process.env['UPDATE_SNAPSHOTS'] === '1') writeFileSync(file, text);
    assert.equal(readFileSync(file, 'utf8'), text, `${file} drifted from the code: run UPDATE_SNAPSHOTS=1 node --test ${import.meta.filename}`);
  }
});

// ---- Types derived from the schemas (checked by tsc; a mismatch is a typecheck error) --------------------
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
const typeChecks: true[] = [
  true satisfies Equal<ShardRef, { name: string; keyBegin: string; rClockBegin: string; build: string }>,
  true satisfies Equal<NonNullable<ActivationState['shard_status']>['status'], 'Ok' | 'Pending' | 'Failed'>,
  true satisfies Equal<AlertState['state'], 'firing' | 'resolved'>,
  true satisfies Equal<AlertState['spec_type'], 'capture' | 'collection' | 'materialization' | 'test'>,
  true satisfies Equal<PublicationInfo['id'], string>,
  true satisfies Equal<JobStatusType, 'queued' | 'buildFailed' | 'testFailed' | 'publishFailed' | 'success' | 'emptyDraft' | 'expectPubIdMismatch' | 'buildIdLockFailure' | 'deprecatedBackground'>,
  true satisfies Equal<SummaryStatus, 'ok' | 'taskDisabled' | 'warning' | 'error'>,
];

test('derived status types (checked by the typecheck)', () => {
  assert.equal(typeChecks.length, 7);
});
