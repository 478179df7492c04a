// A capture's documents as bytes (ConnectorProcessOptions.capturedBytes, byte-check.ts) against the text path
// they replace: the same connector output (a real child process writing recorded lines) captured both ways
// gives the same journal bytes but for the UUIDs — integers beyond 2^53, escapes, UTF-8 (and invalid UTF-8,
// replaced as the text path does), whitespace, `_meta` in every shape, documents longer than a pipe chunk,
// documents the byte check declines — and the same errors for a malformed line, an invalid document and a
// binding out of range.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { UuidProducer, type CaptureRequest, type CaptureResponse, type CaptureSpec, type JsonObject } from '@sluice/runtime';
import { collectionSpec } from '../../src/catalog/collection-spec.ts';
import { JournalStore } from '../../src/journals/store.ts';
import { SchemaValidators } from '../../src/journals/validator.ts';
import { runCaptureSession } from '../../src/tasks/capture.ts';
import { hostSession } from '../../src/tasks/host-session.ts';
import { tempDir } from '../journals/helpers.ts';

const schema: JsonObject = {
  type: 'object',
  properties: { id: { type: 'string' }, n: { type: 'integer' }, big: { type: 'number' }, short: { type: 'string', maxLength: 100 }, tags: { type: 'array' } },
  required: ['id'],
};

function spec(): CaptureSpec {
  const c = (name: string) => collectionSpec({ name, writeSchema: schema, key: ['/id'] });
  return {
    name: 'acmeCo/bytes', connectorType: 'LOCAL', config: {}, intervalSeconds: 60,
    bindings: [
      { resourceConfig: { name: 'a' }, resourcePath: ['a'], stateKey: 'a', collection: c('acmeCo/a') },
      { resourceConfig: { name: 'b' }, resourcePath: ['b'], stateKey: 'b', collection: c('acmeCo/b') },
    ],
  };
}

const checkpoint = (n: number) => Buffer.from(`{"checkpoint":{"state":{"updated":{"n":${n}},"mergePatch":true}}}\n`);
const line = (doc: string | Buffer, binding?: string) => Buffer.concat([Buffer.from(`{"captured":{${binding ?? ''}"doc":`), Buffer.from(doc), Buffer.from('}}\n')]);

/** Captures `output` (the connector's whole stdout) with or without bytes; the journals' texts with UUIDs masked, or the error. */
async function capture(t: { after: (fn: () => void) => void }, output: Buffer, bytes: boolean): Promise<{ journals: Record<string, string>; uuids: number } | { error: string }> {
  const dir = tempDir(t);
  const file = join(dir, 'stdout');
  writeFileSync(file, output);
  const store = JournalStore.open(join(dir, 'data'));
  t.after(() => store.close());
  // The connector: a real process writing the recorded output.
  const session = hostSession<CaptureRequest, CaptureResponse>({ command: process.execPath, args: ['-e', `process.stdout.write(require('node:fs').readFileSync(${JSON.stringify(file)}))`] }, 'capture', 'acmeCo/bytes', {}, { capturedBytes: bytes });
  try {
    await runCaptureSession({ name: 'acmeCo/bytes', spec: spec(), version: 'v1', store, validators: new SchemaValidators(), uuids: new UuidProducer(), session, signal: new AbortController().signal });
  } catch (err) {
    return { error: `${(err as Error).constructor.name}: ${(err as Error).message}` };
  }
  const journals: Record<string, string> = {};
  let uuids = 0;
  for (const j of store.journals()) {
    // The bytes (latin1: one character per byte), not decoded text: invalid UTF-8 would decode the same either way.
    journals[j.name] = store.readLines(j.name, 0, 1e6).data.toString('latin1').replace(/"uuid":"[0-9a-f]{8}-[0-9a-f]{4}-1[0-9a-f]{3}-8000-[0-9a-f]{12}"/g, () => {
      uuids++;
      return '"uuid":"U"';
    });
  }
  return { journals, uuids };
}

test('capture as bytes: the journals hold what the text path writes, byte for byte but the UUIDs', async (t) => {
  const docs: (string | Buffer)[] = [
    '{"id":"plain","n":1,"_meta":{"file":"f.csv","offset":0}}',
    '{"id":"no meta"}',
    '{"id":"empty meta","_meta":{}}',
    '{ "id" : "spaces" , "n" : -7 , "_meta" : { "offset" : 3 } }',
    '{"id":"big","n":9007199254740993,"big":-123456789012345678901234567890,"tags":[18446744073709551615,1.5e300]}',
    '{"id":"escapes \\" \\\\ \\/ \\b\\f\\n\\r\\t \\u00e9 \\ud83d\\ude00 \\ud800","x":{"\\u0041":"key escape inside"}}',
    '{"id":"UTF-8: São Paulo, Zürich, 日本語, 🚲","n":0}',
    Buffer.concat([Buffer.from('{"id":"invalid UTF-8 \xff\xfe'.replace(/[\xff\xfe]/g, ''), 'utf8'), Buffer.from([0xff, 0xc0, 0xaf, 0xed, 0xa0, 0x80]), Buffer.from('"}')]),
    '{"id":"uuid given","_meta":{"uuid":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","file":"f"}}',
    '{"id":"meta not last","_meta":{"file":"f"},"n":2}',
    '{"id":"declined: a keyword the byte check leaves to ajv","short":"abc"}',
    '{"id":"integer with exponent","n":1e3}',
    '{"id":"duplicate","id":"last one wins"}',
    `{"id":"long","tags":[${Array.from({ length: 30_000 }, (_, i) => `"t${i}"`).join(',')}],"_meta":{"offset":9}}`,
  ];
  const parts: Buffer[] = [Buffer.from('{"opened":{}}\n')];
  docs.forEach((d, i) => {
    parts.push(line(d, i % 3 === 1 ? '"binding":1,' : i % 3 === 2 ? '"binding":0,' : ''));
    if (i % 4 === 3) parts.push(checkpoint(i));
  });
  parts.push(checkpoint(docs.length));
  const output = Buffer.concat(parts);
  const text = await capture(t, output, false);
  const bytes = await capture(t, output, true);
  assert.ok('journals' in text, JSON.stringify(text));
  assert.deepEqual(bytes, text);
  assert.equal(text.uuids, docs.length, 'every document got a UUID');
  // The journal holds the connector's text: the big integers exactly, the escapes as written.
  const all = text.journals['acmeCo/a/pivot=00']! + text.journals['acmeCo/b/pivot=00']!;
  assert.match(all, /"n":9007199254740993,"big":-123456789012345678901234567890,"tags":\[18446744073709551615,1.5e300\]/);
  assert.ok(all.includes('\\ud83d\\ude00 \\ud800'));
  // Invalid UTF-8 became U+FFFD (EF BF BD) as the text path has it; valid UTF-8 is as written.
  assert.ok(all.includes('\xef\xbf\xbd') && all.includes(Buffer.from('São Paulo').toString('latin1')));
});

test('capture as bytes: a malformed line, an invalid document and a binding out of range fail as on the text path', async (t) => {
  const open = Buffer.from('{"opened":{}}\n');
  const ok = line('{"id":"fine"}');
  for (const [what, bad] of [
    ['malformed', line('{"id":"x",}')],
    ['malformed string', line('{"id":"x\ty"}')],
    ['invalid', line('{"n":1}')],
    ['invalid type', line('{"id":"x","n":"one"}')],
    ['binding', line('{"id":"x"}', '"binding":5,')],
  ] as const) {
    const output = Buffer.concat([open, ok, checkpoint(1), ok, bad, ok, checkpoint(2)]);
    const text = await capture(t, output, false);
    const bytes = await capture(t, output, true);
    assert.ok('error' in text, `${what}: the text path failed`);
    assert.deepEqual(bytes, text, what);
  }
});
