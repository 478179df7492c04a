// Worker threads for connectors (a separate entry from the runtime's index: a thread that imports only this
// stays small). host.ts: start and talk to a thread; serve.ts: the thread's side; errors.ts: errors across.
export { Thread, threadModule } from './host.ts';
export type { ThreadModule, ThreadOptions } from './host.ts';
export { serveThread } from './serve.ts';
export type { ThreadPort } from './serve.ts';
export { rebuildError, serializeError } from './errors.ts';
export type { SerializedError } from './errors.ts';
