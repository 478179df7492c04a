// The quickstart's source file: bike-share rides as a gzipped CSV, generated deterministically (a
// seeded PRNG), so every run captures the same rows. About 60 bytes a row before compression.
import { gzipSync } from 'node:zlib';

export const DEFAULT_ROWS = 50_000;
export const HEADER = ['ride_id', 'rideable_type', 'started_at', 'ended_at', 'start_station', 'end_station', 'member', 'duration_s', 'distance_km', 'fare_usd'];

const STATIONS = [
  'Broadway & W 60 St', 'W 21 St & 6 Ave', 'Pier 40 - Hudson River Park', 'E 17 St & Broadway', 'Grand Army Plaza',
  'Central Park S & 6 Ave', 'Atlantic Ave & Fort Greene Pl', 'West St & Chambers St', 'Christopher St & Greenwich St',
  '1 Ave & E 68 St', 'Lafayette St & E 8 St', 'Cleveland Pl & Spring St', 'Vesey Pl & River Terrace', 'Bedford Ave & N 7 St',
  'Queens Plaza North & Crescent St', 'Ave A & E 11 St', 'Carmine St & 6 Ave', 'Kent Ave & S 11 St', 'Wythe Ave & Metropolitan Ave',
  'Franklin St & W Broadway',
];
const TYPES = ['classic_bike', 'electric_bike', 'docked_bike'];

/** mulberry32: a small, well-distributed 32-bit PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function csvField(s: string): string {
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** The CSV text of `rows` rides (header first, LF line endings). */
export function ridesCsv(rows = DEFAULT_ROWS, seed = 20240501): string {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const lines = [HEADER.join(',')];
  let t = Date.UTC(2024, 4, 1, 5, 0, 0);
  for (let i = 0; i < rows; i++) {
    t += Math.floor(rand() * 40) * 1000;
    const duration = 120 + Math.floor(rand() * rand() * 3600);
    const type = pick(TYPES);
    const member = rand() < 0.78;
    const distance = Math.round((duration / 3600) * (type === 'electric_bike' ? 17 : 12) * (0.6 + rand() * 0.6) * 100) / 100;
    const fare = member ? (duration > 2700 ? 0.17 * Math.ceil((duration - 2700) / 60) : 0) : 4.79 + (type === 'electric_bike' ? 0.36 * Math.ceil(duration / 60) : 0);
    lines.push([
      `R${String(i + 1).padStart(7, '0')}`, type, new Date(t).toISOString().replace('.000Z', 'Z'),
      new Date(t + duration * 1000).toISOString().replace('.000Z', 'Z'), pick(STATIONS), pick(STATIONS),
      member ? 'true' : 'false', String(duration), distance.toFixed(2), fare.toFixed(2),
    ].map(csvField).join(','));
  }
  return lines.join('\n') + '\n';
}

export function ridesCsvGz(rows = DEFAULT_ROWS, seed = 20240501): Buffer {
  return gzipSync(ridesCsv(rows, seed), { level: 6 });
}
