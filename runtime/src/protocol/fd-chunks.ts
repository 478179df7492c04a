// Reading a pipe or socket fd (a connector's stdin) into ONE reused buffer, pulled a chunk at a time. Why not
// process.stdin: a Readable allocates a new 64 KiB Buffer for every read and runs each chunk through the stream
// machinery; the fresh memory is page-faulted in and then collected. Measured on this machine, reading 354 MiB
// from a socketpair (what a plane's `store` lines to materialize-sqlite amount to for the 500k-row bench):
// process.stdin's async iterator 0.84–0.96 s of CPU (0.47–0.55 s of it in the kernel), this reader 0.30–0.34 s.
//
// The contract that makes the reuse safe: a chunk is valid until the next call of next(). The reader stops
// reading (pauses the socket) as each chunk arrives and resumes only when asked for the next one, so nothing
// overwrites a chunk its consumer still holds. LineSplitter honours this: it decodes the lines of a chunk at
// once and copies a partial last line.
import { fstatSync } from 'node:fs';
import net from 'node:net';
import type { ByteSource } from './line-reader.ts';

/** Bytes read at most per chunk. */
export const FD_CHUNK_BYTES = 1024 * 1024;

type Waiter = { resolve: (r: IteratorResult<Uint8Array>) => void; reject: (err: Error) => void };

/**
 * A pipe's or socket's bytes as chunks of one reused buffer; each chunk is valid until the next `next()`.
 * `return()` destroys the socket (and so closes the fd).
 */
export function fdChunks(fd: number, bufferBytes: number = FD_CHUNK_BYTES): AsyncIterableIterator<Uint8Array> {
  const buffer = Buffer.allocUnsafeSlow(bufferBytes);
  let waiter: Waiter | undefined;
  let ready: Uint8Array | undefined;
  let ended = false;
  let failed: Error | undefined;
  const settle = (fn: (w: Waiter) => void) => {
    const w = waiter;
    waiter = undefined;
    if (w !== undefined) fn(w);
  };
  const socket = new net.Socket({
    fd,
    readable: true,
    writable: false,
    onread: {
      buffer,
      callback: (n: number) => {
        const chunk = buffer.subarray(0, n);
        if (waiter !== undefined) settle((w) => w.resolve({ value: chunk, done: false }));
        else ready = chunk;
        // Pause until the consumer asks for the next chunk: the next read would overwrite this one.
        return false;
      },
    },
  });
  socket.on('end', () => {
    ended = true;
    settle((w) => w.resolve({ value: undefined, done: true }));
  });
  socket.on('error', (err) => {
    failed = err;
    settle((w) => w.reject(err));
  });
  socket.on('close', () => {
    // Closed without an end or an error (destroyed by return()): nothing more comes.
    ended = true;
    settle((w) => w.resolve({ value: undefined, done: true }));
  });
  const it: AsyncIterableIterator<Uint8Array> = {
    [Symbol.asyncIterator]: () => it,
    next(): Promise<IteratorResult<Uint8Array>> {
      if (ready !== undefined) {
        const chunk = ready;
        ready = undefined;
        return Promise.resolve({ value: chunk, done: false });
      }
      if (failed !== undefined) return Promise.reject(failed);
      if (ended) return Promise.resolve({ value: undefined, done: true });
      const p = new Promise<IteratorResult<Uint8Array>>((resolve, reject) => { waiter = { resolve, reject }; });
      socket.resume();
      return p;
    },
    return(): Promise<IteratorResult<Uint8Array>> {
      ended = true;
      ready = undefined;
      socket.destroy();
      return Promise.resolve({ value: undefined, done: true });
    },
  };
  return it;
}

/**
 * A connector's stdin as a byte source: fdChunks when fd 0 is a pipe or a socket (how Flow's runtime, the plane
 * and a shell pipe connect it), else process.stdin (a file redirected in, a terminal).
 */
export function stdinSource(): ByteSource {
  try {
    const st = fstatSync(0);
    if (st.isFIFO() || st.isSocket()) return fdChunks(0);
  } catch {
    // fd 0 closed or unreadable: process.stdin reports it the usual way.
  }
  return process.stdin;
}
