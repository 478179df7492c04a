// The fence: exactly-once commits against a zombie-prone world.
// At open, one transaction bumps `fence` on every checkpoint row of this materialization whose key range
// overlaps ours, reads the narrowest row covering our range (its checkpoint is what the runtime resumes
// from), and inserts a row for exactly our range if none exists. Every commit then updates our row
// `WHERE fence = <ours>`: an instance opened after us has bumped it, so a stale instance updates zero rows
// and its whole transaction (data included) rolls back.
// The checkpoint column holds upstream's format (base64 protobuf consumer.Checkpoint, see checkpoint.ts): a fresh
// row starts with the explicit zero checkpoint, and a row split from a covering parent starts with the parent's.
import type { RuntimeCheckpoint } from '@sluice/runtime';
import type { Connection } from './client.ts';
import { inTransaction } from './client.ts';
import type { Dialect } from './dialect.ts';
import { FencedError } from './errors.ts';
import { EXPLICIT_ZERO_CHECKPOINT, checkpointFromText, checkpointToText } from './checkpoint.ts';

export interface FenceSpec {
  /** Path of the checkpoints table (`[flow_checkpoints_v1]` or `[schema, flow_checkpoints_v1]`). */
  path: string[];
  materialization: string;
  keyBegin: number;
  keyEnd: number;
}

export interface Fence extends FenceSpec {
  fence: number;
  /**
   * The runtime checkpoint last committed with our data (`{}` for upstream's explicit zero checkpoint: start from
   * the beginning); undefined when the row holds nothing (an earlier Sluice fresh row).
   */
  checkpoint: RuntimeCheckpoint | undefined;
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
    let checkpointText = EXPLICIT_ZERO_CHECKPOINT;
    let exact = false;
    if (row !== undefined) {
      fence = Number(row.fence);
      checkpointText = row.checkpoint === null || row.checkpoint === undefined ? '' : String(row.checkpoint);
      exact = Number(row.key_begin) === keyBegin && Number(row.key_end) === keyEnd;
    }
    if (!exact) await conn.exec(t.fenceInsert(path, materialization, keyBegin, keyEnd, fence, checkpointText));
    return { ...spec, fence, checkpoint: checkpointFromText(checkpointText, `checkpoints table ${path.join('.')}`) };
  });
}

/** Write the checkpoint under the fence, inside the caller's open transaction. Throws FencedError if fenced off. */
export async function commitCheckpoint(conn: Connection, dialect: Dialect, fence: Fence, checkpoint: RuntimeCheckpoint): Promise<void> {
  const sql = dialect.templates.checkpointUpdate(fence.path, fence.materialization, fence.keyBegin, fence.keyEnd, fence.fence, checkpointToText(checkpoint));
  const n = await conn.exec(sql);
  if (n < 1) {
    throw new FencedError(`This instance was fenced off by another: materialization '${fence.materialization}' (keys ${fence.keyBegin}–${fence.keyEnd}) was opened again since fence ${fence.fence}; this commit was rolled back`);
  }
}
