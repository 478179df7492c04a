// The fence: exactly-once commits against a zombie-prone world.
// At open, one transaction bumps `fence` on every checkpoint row of this materialization whose key range
// overlaps ours, reads the narrowest row covering our range (its checkpoint is what the runtime resumes
// from), and inserts a row for exactly our range if none exists. Every commit then updates our row
// `WHERE fence = <ours>`: an instance opened after us has bumped it, so a stale instance updates zero rows
// and its whole transaction (data included) rolls back.
import type { RuntimeCheckpoint } from '@sluice/runtime';
import type { Connection } from './client.ts';
import { inTransaction } from './client.ts';
import type { Dialect } from './dialect.ts';
import { FencedError, SqlError } from './errors.ts';

export interface FenceSpec {
  /** Path of the checkpoints table (`[flow_checkpoints_v1]` or `[schema, flow_checkpoints_v1]`). */
  path: string[];
  materialization: string;
  keyBegin: number;
  keyEnd: number;
}

export interface Fence extends FenceSpec {
  fence: number;
  /** The runtime checkpoint last committed with our data; undefined when nothing was ever committed. */
  checkpoint: RuntimeCheckpoint | undefined;
}

function parseCheckpoint(text: unknown): RuntimeCheckpoint | undefined {
  if (text === null || text === undefined || text === '') return undefined;
  try {
    const v: unknown = JSON.parse(String(text));
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as RuntimeCheckpoint;
  } catch (cause) {
    throw new SqlError(`the checkpoints table holds a checkpoint that is not JSON; was it written by another tool?`, { cause });
  }
  throw new SqlError(`the checkpoints table holds a checkpoint that is not a JSON object`);
}

/** Install the fence (see the file comment). Returns our fence and the recovered checkpoint. */
export async function installFence(conn: Connection, dialect: Dialect, spec: FenceSpec): Promise<Fence> {
  const t = dialect.templates;
  const { path, materialization, keyBegin, keyEnd } = spec;
  return inTransaction(conn, async () => {
    await conn.exec(t.fenceBump(path, materialization, keyBegin, keyEnd));
    const rows = await conn.query(t.fenceSelect(path, materialization, keyBegin, keyEnd));
    const row = rows[0];
    let fence = 0;
    let checkpointText = '';
    let exact = false;
    if (row !== undefined) {
      fence = Number(row.fence);
      checkpointText = row.checkpoint === null || row.checkpoint === undefined ? '' : String(row.checkpoint);
      exact = Number(row.key_begin) === keyBegin && Number(row.key_end) === keyEnd;
    }
    if (!exact) await conn.exec(t.fenceInsert(path, materialization, keyBegin, keyEnd, fence, checkpointText));
    return { ...spec, fence, checkpoint: parseCheckpoint(checkpointText) };
  });
}

/** Write the checkpoint under the fence, inside the caller's open transaction. Throws FencedError if fenced off. */
export async function commitCheckpoint(conn: Connection, dialect: Dialect, fence: Fence, checkpoint: RuntimeCheckpoint): Promise<void> {
  const sql = dialect.templates.checkpointUpdate(fence.path, fence.materialization, fence.keyBegin, fence.keyEnd, fence.fence, JSON.stringify(checkpoint));
  const n = await conn.exec(sql);
  if (n < 1) {
    throw new FencedError(`This instance was fenced off by another: materialization '${fence.materialization}' (keys ${fence.keyBegin}–${fence.keyEnd}) was opened again since fence ${fence.fence}; this commit was rolled back`);
  }
}
