export type * from './catalog/types.ts';
export type * from './control/recorder.ts';
