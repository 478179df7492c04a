// Parsing a connector's stderr the way Flow's connector init does (flow-protocol.md §1.5).
import type { LogLevel } from '../log.ts';
import { parseLogLevel } from '../log.ts';

export interface ConnectorLog {
  level: LogLevel;
  msg: string;
  fields: Record<string, unknown>;
  /** False for plain-text lines (kept as text). */
  json: boolean;
}

const ERRORISH = /error|failed|panic|timeout|unable|unrecognized/i;

/** Parses one stderr line; non-JSON text becomes an error or warn entry by its wording. */
export function parseConnectorLog(line: string): ConnectorLog {
  const trimmed = line.trim();
  if (trimmed.startsWith('{')) {
    try {
      const value = JSON.parse(trimmed) as Record<string, unknown>;
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
        const levelText = typeof value['level'] === 'string' ? value['level'] : typeof value['lvl'] === 'string' ? value['lvl'] : undefined;
        const msg = typeof value['msg'] === 'string' ? value['msg'] : typeof value['message'] === 'string' ? value['message'] : '';
        const fields: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(value)) {
          if (['level', 'lvl', 'msg', 'message', 'fields', 'ts', 'time', 'timestamp'].includes(k)) continue;
          fields[k] = v;
        }
        if (typeof value['fields'] === 'object' && value['fields'] !== null && !Array.isArray(value['fields'])) {
          Object.assign(fields, value['fields']);
        }
        return { level: parseLogLevel(levelText) ?? 'info', msg, fields, json: true };
      }
    } catch {
      // fall through: plain text
    }
  }
  return { level: ERRORISH.test(trimmed) ? 'error' : 'warn', msg: trimmed, fields: {}, json: false };
}

/** True for a `connectorStatus` event. */
export function isStatusEvent(log: ConnectorLog): boolean {
  return log.json && log.fields['eventType'] === 'connectorStatus';
}
