// Newline-delimited JSON framing (flow-protocol.md §1.3), the writing side: one serialised writer per stream
// that coalesces document lines and honours the stream's backpressure (a blocked writer resolves on drain).
import type { Writable } from 'node:stream';
import { ProtocolError } from '../errors.ts';
import { stringifyDocument } from './documents.ts';
import type { JsonValue } from './specs.ts';

const RESOLVED: Promise<void> = Promise.resolve();

/** Buffered document lines are handed to the stream once they reach this many characters. */
export const DOCUMENT_BUFFER_CHARS = 64 * 1024;

/**
 * The one writer of a stream. Lines are handed to the stream in call order, so concurrent producers
 * never interleave. Document lines (`writeDocument`) are coalesced into ~64 KiB writes — flushed when
 * the buffer fills, before any other message, and on the next turn of the event loop — the way Flow's
 * Go runtime buffers `captured` lines and flushes on everything else. The returned promise resolves
 * at once while the stream has room and otherwise on `drain`: await it to honour backpressure.
 */
export class MessageWriter {
  readonly stream: Writable;
  private blocked: Promise<void> | null = null;
  private failure: Error | null = null;
  private rejectBlocked: ((err: Error) => void) | null = null;
  private buffer = '';
  private flushScheduled = false;

  constructor(stream: Writable) {
    this.stream = stream;
    stream.on('error', (err: Error) => {
      this.failure ??= err;
      this.rejectBlocked?.(err);
    });
    // A stream destroyed without an error never drains: release blocked writers.
    stream.on('close', () => {
      this.rejectBlocked?.(this.failure ?? new ProtocolError('output is closed: cannot write another message'));
    });
  }

  /** True while the stream is over its high-water mark (writes resolve on drain). */
  get isBlocked(): boolean {
    return this.blocked !== null;
  }

  /** Serialises one message as a JSON line and writes it now (after any buffered documents). */
  write(message: object): Promise<void> {
    return this.writeLine(stringifyDocument(message as JsonValue) + '\n');
  }

  /** Serialises a document message (`captured`, `loaded`) into the coalescing buffer. */
  writeDocument(message: object): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    this.buffer += stringifyDocument(message as JsonValue) + '\n';
    if (this.buffer.length >= DOCUMENT_BUFFER_CHARS) return this.writeLine('');
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushSoon);
    }
    return this.blocked ?? RESOLVED;
  }

  /**
   * Appends an already-serialised document line (ending with `\n`) to the coalescing buffer, exactly as
   * writeDocument does with the line it serialises (the host sending `load` and `store` requests it built as text).
   */
  writeDocumentLine(line: string): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    this.buffer += line;
    if (this.buffer.length >= DOCUMENT_BUFFER_CHARS) return this.writeLine('');
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushSoon);
    }
    return this.blocked ?? RESOLVED;
  }

  /**
   * Writes already-framed document lines given as UTF-8 bytes (ending with `\n`), after any buffered
   * documents. The stream keeps the bytes until it has written them: `written` is called then (with the
   * error if the write failed), and only after that may the caller reuse the buffer.
   */
  writeDocumentBytes(bytes: Uint8Array, written?: (err?: Error | null) => void): Promise<void> {
    const refuse = this.failure ?? (this.stream.destroyed || this.stream.writableEnded ? new ProtocolError('output is closed: cannot write another message') : null);
    if (refuse) {
      written?.(refuse);
      return Promise.reject(refuse);
    }
    if (this.buffer !== '') this.writeLine('').catch(() => undefined);
    if (bytes.length === 0) {
      written?.(null);
      return this.blocked ?? RESOLVED;
    }
    const ok = written === undefined ? this.stream.write(bytes) : this.stream.write(bytes, written);
    if (!ok && this.blocked === null) this.block();
    return this.blocked ?? RESOLVED;
  }

  private block(): void {
    this.blocked = new Promise<void>((resolve, reject) => {
      this.rejectBlocked = reject;
      this.stream.once('drain', () => {
        this.blocked = null;
        this.rejectBlocked = null;
        resolve();
      });
    });
    // A rejection nobody awaits must not crash the process; writers see it on their next write.
    this.blocked.catch(() => undefined);
  }

  private readonly flushSoon = (): void => {
    this.flushScheduled = false;
    if (this.buffer !== '' && !this.failure && !this.stream.destroyed && !this.stream.writableEnded) {
      this.writeLine('').catch(() => undefined);
    }
  };

  /** Writes one already-serialised line (must end with `\n`; '' just flushes buffered documents). */
  writeLine(line: string): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.stream.destroyed || this.stream.writableEnded) {
      return Promise.reject(new ProtocolError('output is closed: cannot write another message'));
    }
    let chunk = line;
    if (this.buffer !== '') {
      chunk = this.buffer + line;
      this.buffer = '';
    }
    if (chunk === '') return this.blocked ?? RESOLVED;
    if (!this.stream.write(chunk) && this.blocked === null) this.block();
    return this.blocked ?? RESOLVED;
  }

  /** Resolves once everything written so far (buffered documents included) has been handed on. */
  flush(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.stream.destroyed || this.stream.writableEnded) return RESOLVED;
    if (this.buffer !== '') this.writeLine('').catch(() => undefined);
    return new Promise<void>((resolve, reject) => {
      this.stream.write('', (err) => (err ? reject(err) : resolve()));
    });
  }
}
