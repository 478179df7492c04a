import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JsonLogger, parseLogLevel } from '../src/log.ts';
import { LogCollector } from './helpers.ts';

describe('JsonLogger: bad input', () => {
  it('an unknown LOG_LEVEL warns once and uses info', () => {
    const sink = new LogCollector();
    const log = new JsonLogger({ stream: sink, env: { LOG_LEVEL: 'chatty' } });
    log.debug('hidden');
    log.info('shown');
    assert.deepEqual(sink.entries, [
      { level: 'warn', msg: 'LOG_LEVEL is not a known level; using info', fields: { LOG_LEVEL: 'chatty' } },
      { level: 'info', msg: 'shown', fields: {} },
    ]);
  });
});

describe('JsonLogger', () => {
  it('writes {level,msg,fields} lines and honours LOG_LEVEL', () => {
    const sink = new LogCollector();
    const log = new JsonLogger({ stream: sink, env: { LOG_LEVEL: 'WARNING' } });
    log.info('hidden');
    log.warn('careful', { n: 1 });
    log.error('broken');
    assert.deepEqual(sink.raw, [
      '{"level":"warn","msg":"careful","fields":{"n":1}}\n',
      '{"level":"error","msg":"broken","fields":{}}\n',
    ]);
  });
  it('debug shows with LOG_LEVEL=debug', () => {
    const sink = new LogCollector();
    new JsonLogger({ stream: sink, env: { LOG_LEVEL: 'debug' } }).debug('details');
    assert.deepEqual(sink.entries, [{ level: 'debug', msg: 'details', fields: {} }]);
  });
  it('status() emits connectorStatus at info, even when info is filtered', () => {
    const sink = new LogCollector();
    const log = new JsonLogger({ stream: sink, env: { LOG_LEVEL: 'error' } });
    log.status('Backfilling 2 out of 5 bindings', { done: 2 });
    assert.deepEqual(sink.entries, [{ level: 'info', msg: 'Backfilling 2 out of 5 bindings', fields: { done: 2, eventType: 'connectorStatus' } }]);
  });
  it('child loggers add fields; BigInt, Error and bytes serialise', () => {
    const sink = new LogCollector();
    const log = new JsonLogger({ stream: sink, env: {} }).child({ binding: 1 });
    log.info('x', { big: 2n ** 64n, err: Object.assign(new Error('boom'), { code: 'E1' }), bytes: Uint8Array.of(1, 2) });
    assert.deepEqual(sink.entries, [{ level: 'info', msg: 'x', fields: { binding: 1, big: '18446744073709551616', err: { message: 'boom', code: 'E1' }, bytes: 'AQI=' } }]);
  });
  it('parses level names in any case', () => {
    assert.equal(parseLogLevel('TRACE'), 'trace');
    assert.equal(parseLogLevel('Fatal'), 'error');
    assert.equal(parseLogLevel('panic'), 'error');
    assert.equal(parseLogLevel(undefined), undefined);
  });
});
