import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, DecodeError } from '../src/errors.ts';
import { ProtobufRecordParser, compileMessageType } from '../src/protobuf.ts';
import { CHUNK_SIZES, feed } from './helpers.ts';
import { PROTO } from './fixtures.ts';

describe('protobuf', () => {
  test('bad input: unknown message and a .proto that does not compile', () => {
    assert.throws(() => compileMessageType(PROTO, 'Nope'), (e: unknown) => e instanceof ConfigError && e.message === "no such message 'Nope' found in proto file (messages: transit_realtime.FeedEntity, transit_realtime.FeedMessage)");
    assert.throws(() => compileMessageType('message {', 'X'), (e: unknown) => e instanceof ConfigError && e.message.startsWith('the protobuf .proto file does not compile: '));
  });

  test('bad input: bytes that are not the message', () => {
    const type = compileMessageType(PROTO, 'FeedMessage');
    assert.throws(() => feed(new ProtobufRecordParser(type), Buffer.from([0x0a, 0x05, 0x01]), 1), (e: unknown) => e instanceof DecodeError && /^failed to decode the file as protobuf message 'FeedMessage': /.test(e.message));
  });

  test('empty input yields nothing', () => {
    assert.deepEqual(feed(new ProtobufRecordParser(compileMessageType(PROTO, 'FeedMessage')), new Uint8Array(0), 1), []);
  });

  test('one document per file, proto3 JSON mapping, package-relative and full names', () => {
    const type = compileMessageType(PROTO, 'FeedMessage');
    assert.equal(compileMessageType(PROTO, 'transit_realtime.FeedMessage').fullName, type.fullName);
    const bytes = type.encode(type.fromObject({ entity: [{ id: 'a', timestamp: '1660663993', kind: 1, blob: Buffer.from('hi'), routeId: 'r1' }, { id: 'b' }], headerTime: '18446744073709551615' })).finish();
    for (const size of CHUNK_SIZES) {
      assert.deepEqual(feed(new ProtobufRecordParser(type), bytes, size), [{
        entity: [{ id: 'a', timestamp: '1660663993', kind: 'TRAM', blob: 'aGk=', routeId: 'r1' }, { id: 'b' }],
        headerTime: '18446744073709551615',
      }]);
    }
  });
});
