// `sluice connectors`: the built-in connectors and their images.
import { BUILTIN_CONNECTORS, isInstalled } from '../registry.ts';

export const description = 'list the built-in connectors with their image names';

export const CONNECTORS_USAGE = `usage: sluice connectors [--json]

Lists the built-in connectors: name, protocol, image, what it does.
  --json      one JSON object per connector (name, protocol, image, bin, installed)
  -h, --help  this help

Images: the connectors are built as ghcr.io/sluice-dev/<connector> (docker/README.md). In a catalog,
\`connector.image\` naming any registry path that ends in /<connector> — ghcr.io/sluice-dev/source-http-file:dev,
or Estuary's ghcr.io/estuary/source-http-file:dev as Flow catalogs write it — runs this repository's built-in
connector as a local process, so Flow catalogs run unchanged. With \`--container-engine docker|podman\` (serve,
preview) the image itself is run instead.`;

export async function connectorsCommand(argv: string[], out: (line: string) => void = (l) => process.stdout.write(l + '\n')): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out(CONNECTORS_USAGE);
    return 0;
  }
  const json = argv.includes('--json');
  const unknown = argv.filter((a) => a !== '--json');
  if (unknown.length > 0) {
    process.stderr.write(`sluice connectors: unknown argument ${JSON.stringify(unknown[0])}\n${CONNECTORS_USAGE}\n`);
    return 2;
  }
  if (json) {
    for (const c of BUILTIN_CONNECTORS) {
      out(JSON.stringify({ name: c.name, protocol: c.protocol, image: c.image, bin: c.bin, installed: isInstalled(c) }));
    }
    return 0;
  }
  const width = Math.max(...BUILTIN_CONNECTORS.map((c) => c.name.length));
  const imageWidth = Math.max(...BUILTIN_CONNECTORS.map((c) => c.image.length));
  for (const c of BUILTIN_CONNECTORS) {
    out(`${c.name.padEnd(width)}  ${c.protocol.padEnd(11)}  ${c.image.padEnd(imageWidth)}  ${c.description}${isInstalled(c) ? '' : ' (bin not found)'}`);
  }
  return 0;
}
