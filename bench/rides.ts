// The rides data every file and pipeline bench reads (bench/http-file.ts, bench/pipeline.ts): 12 columns of
// ids, e-mails, cities (one with a comma, so quoted), timestamps, numbers, booleans and a note that is
// sometimes quoted with doubled quotes — the same rows for the same count, so figures compare across benches.

export const RIDES_COLUMNS = ['ride_id', 'vehicle_id', 'rider_email', 'city', 'started_at', 'ended_at', 'distance_km', 'fare', 'tip', 'member', 'device', 'note'] as const;
const CITIES = ['Lisbon', 'Osaka', 'São Paulo', 'Zürich', 'New York, NY', 'Nairobi', 'Reykjavík', 'Chennai'];

/** The rides CSV of `rows` rows: the header line, then the rows in strings of about 1 MiB. */
export function* ridesCsv(rows: number): Generator<string> {
  yield `${RIDES_COLUMNS.join(',')}\n`;
  let batch = '';
  for (let i = 0; i < rows; i++) {
    const start = 1_700_000_000_000 + i * 37_000;
    const city = CITIES[i % CITIES.length] as string;
    const h = ((i * 2654435761) >>> 0).toString(16).padStart(8, '0');
    const note = i % 11 === 0 ? '"late, but ""fine"""' : 'ok';
    batch += `${h}-${i},${h}-4a1f-9c2e-${String(i).padStart(12, '0')},rider${i % 99991}@example.com,${city.includes(',') ? `"${city}"` : city},`
      + `${new Date(start).toISOString().replace('T', ' ').slice(0, 19)},${new Date(start + 900_000).toISOString().replace('T', ' ').slice(0, 19)},`
      + `${(i % 997) / 10},${(i % 5000) / 100},${i % 7},${i % 3 === 0 ? 'true' : 'false'},${i % 2 ? 'android-14.2' : 'ios-17.5.1'},${note}\n`;
    if (batch.length > 1 << 20) {
      yield batch;
      batch = '';
    }
  }
  if (batch !== '') yield batch;
}
