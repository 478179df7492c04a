// What the control store holds of task metrics (table task_metrics): documents and bytes read and written per
// task and binding, summed as the data plane reports them; what /metrics serves.
import type { DatabaseSync } from 'node:sqlite';
import type { TaskMetricsInput } from './recorder.ts';
import type { Row } from './live-spec.ts';

export interface MetricsRow {
  task: string;
  binding: string;
  docsRead: number;
  bytesRead: number;
  docsWritten: number;
  bytesWritten: number;
  lastTs: string | null;
}

export function addTaskMetrics(db: DatabaseSync, catalogName: string, m: TaskMetricsInput): void {
  db.prepare(`INSERT INTO task_metrics (task, binding, docs_read, bytes_read, docs_written, bytes_written, last_ts)
    VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (task, binding) DO UPDATE SET docs_read = docs_read + excluded.docs_read, bytes_read = bytes_read + excluded.bytes_read,
      docs_written = docs_written + excluded.docs_written, bytes_written = bytes_written + excluded.bytes_written,
      last_ts = max(coalesce(last_ts, ''), excluded.last_ts)`)
    .run(catalogName, m.binding, m.docsRead ?? 0, m.bytesRead ?? 0, m.docsWritten ?? 0, m.bytesWritten ?? 0, m.ts.toISOString());
}

export function taskMetrics(db: DatabaseSync, prefix: string): MetricsRow[] {
  return (db.prepare('SELECT * FROM task_metrics WHERE substr(task, 1, length(?)) = ? ORDER BY task, binding').all(prefix, prefix) as Row[]).map((r) => ({
    task: String(r.task), binding: String(r.binding), docsRead: Number(r.docs_read), bytesRead: Number(r.bytes_read),
    docsWritten: Number(r.docs_written), bytesWritten: Number(r.bytes_written), lastTs: r.last_ts === null ? null : String(r.last_ts),
  }));
}
