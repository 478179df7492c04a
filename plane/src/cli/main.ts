// The `sluice` CLI dispatcher. Each command lives in its own file and exports a function
// `(argv: string[]) => Promise<number>` (the exit code) and a `description`. Adding a command is one
// line in COMMANDS. Modules load lazily, so one command's dependencies never slow another.

interface CommandEntry {
  load: () => Promise<Record<string, unknown>>;
  /** The exported function that runs the command. */
  run: string;
  /** Overrides the module's exported `description`. */
  description?: string;
  /** Starts, before the command's modules load, what it will need first (not for --help). */
  ahead?: () => Promise<void>;
}

// serve and start publish a catalog at once: its first materialization's thread boots while the plane loads.
const materializationThreadAhead = async () => {
  const { prestartMaterializationThread } = await import('../tasks/materialize-threads.ts');
  prestartMaterializationThread();
};

export const COMMANDS: Record<string, CommandEntry> = {
  connectors: { load: () => import('./connectors.ts'), run: 'connectorsCommand' },
  raw: { load: () => import('./raw.ts'), run: 'rawCommand' },
  preview: { load: () => import('./preview.ts'), run: 'previewCommand' },
  test: { load: () => import('./test.ts'), run: 'testCommand' },
  serve: { load: () => import('./serve.ts'), run: 'serveCommand', ahead: materializationThreadAhead },
  start: { load: () => import('./start.ts'), run: 'startCommand', ahead: materializationThreadAhead },
  token: { load: () => import('./token.ts'), run: 'runTokenCommand', description: 'create a refresh token for the control-plane API (token create)' },
};

async function describeCommands(): Promise<string> {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  const lines = await Promise.all(Object.entries(COMMANDS).map(async ([name, entry]) => {
    let text = entry.description;
    if (text === undefined) {
      try {
        const mod = await entry.load();
        text = typeof mod['description'] === 'string' ? mod['description'] : '';
      } catch (err) {
        text = `(unavailable: ${(err as Error).message.split('\n')[0]})`;
      }
    }
    return `  ${name.padEnd(width)}  ${text}`;
  }));
  return lines.join('\n');
}

export async function usage(): Promise<string> {
  return `usage: sluice <command> [options]

commands:
${await describeCommands()}

Run \`sluice <command> --help\` for a command's options.`;
}

/** Runs the CLI; returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const text = await usage();
    if (name === undefined) {
      process.stderr.write(text + '\n');
      return 2;
    }
    process.stdout.write(text + '\n');
    return 0;
  }
  const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (entry === undefined) {
    process.stderr.write(`sluice: unknown command ${JSON.stringify(name)}\n\n${await usage()}\n`);
    return 2;
  }
  if (entry.ahead !== undefined && !rest.includes('--help') && !rest.includes('-h')) await entry.ahead();
  const mod = await entry.load();
  const run = mod[entry.run];
  if (typeof run !== 'function') throw new Error(`sluice: command ${name} does not export ${entry.run}()`);
  return (run as (argv: string[]) => Promise<number>)(rest);
}
