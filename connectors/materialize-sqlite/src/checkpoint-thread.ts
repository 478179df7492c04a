// The WAL checkpoint thread (started by wal-checkpointer.ts): its own connection to the database file runs
// PASSIVE checkpoints when asked, so copying committed WAL frames into the file, and the fsyncs that go with it,
// do not stop the connector's main thread. A PASSIVE checkpoint never waits for a lock and never blocks the
// writer or the readers. This module imports node:sqlite and the runtime's thread entry only (a small thread).
import { DatabaseSync } from 'node:sqlite';
import type { StatementSync } from 'node:sqlite';
import { serializeError, serveThread } from '@sluice/runtime/thread';
import type { CheckpointIn, CheckpointOut } from './wal-checkpointer.ts';

let db: DatabaseSync | undefined;
let checkpoint: StatementSync | undefined;

const port = serveThread<CheckpointIn, CheckpointOut>('materialize-sqlite/src/checkpoint-thread.ts', (m) => {
  try {
    switch (m.type) {
      case 'open':
        // The file exists (the host starts this thread after a commit) and is in WAL mode already. Checkpoints
        // fsync as the connector's own connections would (synchronous=NORMAL: the WAL before the copy, the file
        // after it). The busy timeout covers opening only: a PASSIVE checkpoint never invokes it.
        db = new DatabaseSync(m.path, { timeout: 5_000 });
        db.exec('PRAGMA synchronous = NORMAL');
        checkpoint = db.prepare('PRAGMA main.wal_checkpoint(PASSIVE)');
        port.post({ type: 'opened' });
        return;
      case 'checkpoint': {
        // busy = 1 when another connection's checkpoint holds the lock (the main thread's fallback): that one
        // does the work. log/checkpointed: frames in the WAL and frames copied into the file so far.
        const r = checkpoint!.get() as { busy: number | bigint; log: number | bigint; checkpointed: number | bigint };
        port.post({ type: 'checkpointed', busy: Number(r.busy) === 1, log: Number(r.log), checkpointed: Number(r.checkpointed) });
        return;
      }
      case 'close':
        // When the connector's own connections are closed already, this is the file's last connection: SQLite
        // then checkpoints what is left and deletes the WAL here, as the main thread's close did before.
        checkpoint = undefined;
        db?.close();
        db = undefined;
        port.post({ type: 'closed' });
        return;
    }
  } catch (err) {
    port.post({ type: 'failed', error: serializeError(err) });
  }
});
