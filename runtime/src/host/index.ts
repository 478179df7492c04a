// Host side: spawn a connector and drive its RPCs (see connector-process.ts).
export {};
