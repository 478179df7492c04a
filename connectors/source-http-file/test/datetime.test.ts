import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DatetimeNormalizer } from '../src/datetime.ts';

test('bad input: a malformed default offset', () => {
  assert.throws(() => new DatetimeNormalizer('+5'), { message: "could not parse offset '+5': expected +HH:MM or -HH:MM" });
});

test('timestamps are normalised as upstream does', () => {
  const d = new DatetimeNormalizer();
  const cases: [string, string][] = [
    ['2020-01-01 00:00:00.000', '2020-01-01T00:00:00Z'],
    ['2020-01-01T00:00:00', '2020-01-01T00:00:00Z'],
    ['2020-01-01T00:00:00z', '2020-01-01T00:00:00Z'],
    ['2020-01-01T10:00:00+05:30', '2020-01-01T10:00:00+05:30'],
    ['2020-01-01 10:00:00-00:00', '2020-01-01T10:00:00Z'],
    ['2020-01-01T00:00:00.5', '2020-01-01T00:00:00.5Z'],
    ['2020-01-01 12:30:00.250', '2020-01-01T12:30:00.25Z'],
    ['2020-01-01T00:00:00.120000', '2020-01-01T00:00:00.12Z'],
    ['2020-01-01T00:00:00.123456', '2020-01-01T00:00:00.123456Z'],
    ['2020-01-01T00:00:00.1234567', '2020-01-01T00:00:00.1234567Z'],
    ['2020-01-01T00:00:00.000000001', '2020-01-01T00:00:00.000000001Z'],
    ['2020-01-01T00:00:00.1234567891', '2020-01-01T00:00:00.123456789Z'],
    ['2020-01-01T00:00:00.0000000001', '2020-01-01T00:00:00Z'],
    ['2020-01-01', '2020-01-01'],
    ['00:00:00', '00:00:00'],
    ['2020-01-01T00:00:00 trailing', '2020-01-01T00:00:00 trailing'],
    ['2020-02-30T00:00:00', '2020-02-30T00:00:00'],
  ];
  for (const [input, output] of cases) assert.equal(d.string(input), output, input);
  assert.equal(new DatetimeNormalizer('-05:00').string('2020-01-01T00:00:00'), '2020-01-01T00:00:00-05:00');
});

test('values are rewritten recursively through arrays and objects', () => {
  const d = new DatetimeNormalizer();
  assert.deepEqual(d.value({ x: ['2020-01-01 00:00:00'], y: { z: ['2020-01-01 00:00:00'], k: '2020-01-01 00:00:00' }, n: 1 }),
    { x: ['2020-01-01T00:00:00Z'], y: { z: ['2020-01-01T00:00:00Z'], k: '2020-01-01T00:00:00Z' }, n: 1 });
});
