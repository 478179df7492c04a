// Prometheus text exposition of task metrics under a prefix. Values are totals since the data dir was
// created (the reference's month-to-date reset is not reproduced). Zero-valued samples are omitted;
// every metric still gets its HELP and TYPE lines; the body ends with `# EOF`.
import type { ControlStore } from '../control/store.ts';

interface Metric { name: string; help: string; type: 'counter' | 'gauge'; samples: { labels: Record<string, string>; value: number }[] }

export function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export function renderMetrics(store: ControlStore, prefix: string): string {
  const rows = store.metrics(prefix);
  const tasks = new Set<string>(rows.map((r) => r.task));
  for (const s of store.all()) {
    if (s.catalogName.startsWith(prefix) && (s.specType === 'capture' || s.specType === 'materialization')) tasks.add(s.catalogName);
  }
  const m = (name: string, help: string, type: Metric['type'] = 'counter'): Metric => ({ name, help, type, samples: [] });
  const readDocs = m('read_by_me_docs_total', 'Documents read by the task');
  const readBytes = m('read_by_me_bytes_total', 'Bytes read by the task');
  const writtenDocs = m('written_by_me_docs_total', 'Documents written by the task');
  const writtenBytes = m('written_by_me_bytes_total', 'Bytes written by the task');
  const bReadDocs = m('binding_read_docs_total', 'Documents read by the task, per binding');
  const bReadBytes = m('binding_read_bytes_total', 'Bytes read by the task, per binding');
  const bWrittenDocs = m('binding_written_docs_total', 'Documents written by the task, per binding');
  const bWrittenBytes = m('binding_written_bytes_total', 'Bytes written by the task, per binding');
  const failures = m('logged_failures_total', 'Shard failures of the task');
  const lastCommit = m('last_commit_time_seconds', 'Unix time of the task\'s last committed transaction', 'gauge');

  for (const task of [...tasks].sort()) {
    const mine = rows.filter((r) => r.task === task);
    const sum = (f: (r: typeof rows[number]) => number) => mine.reduce((a, r) => a + f(r), 0);
    readDocs.samples.push({ labels: { task }, value: sum((r) => r.docsRead) });
    readBytes.samples.push({ labels: { task }, value: sum((r) => r.bytesRead) });
    writtenDocs.samples.push({ labels: { task }, value: sum((r) => r.docsWritten) });
    writtenBytes.samples.push({ labels: { task }, value: sum((r) => r.bytesWritten) });
    for (const r of mine) {
      const labels = { task, binding: r.binding };
      bReadDocs.samples.push({ labels, value: r.docsRead });
      bReadBytes.samples.push({ labels, value: r.bytesRead });
      bWrittenDocs.samples.push({ labels, value: r.docsWritten });
      bWrittenBytes.samples.push({ labels, value: r.bytesWritten });
    }
    failures.samples.push({ labels: { task }, value: store.failureTotal(task) });
    const last = mine.map((r) => r.lastTs).filter((t): t is string => t !== null).sort().at(-1);
    if (last) lastCommit.samples.push({ labels: { task }, value: Date.parse(last) / 1000 });
  }

  const lines: string[] = [];
  for (const metric of [readDocs, readBytes, writtenDocs, writtenBytes, bReadDocs, bReadBytes, bWrittenDocs, bWrittenBytes, failures, lastCommit]) {
    lines.push(`# HELP ${metric.name} ${metric.help}`, `# TYPE ${metric.name} ${metric.type}`);
    for (const s of metric.samples) {
      if (s.value === 0) continue;
      const labels = Object.entries(s.labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',');
      lines.push(`${metric.name}{${labels}} ${s.value}`);
    }
  }
  lines.push('# EOF');
  return lines.join('\n') + '\n';
}
