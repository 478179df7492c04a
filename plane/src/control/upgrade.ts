// Connector version upgrades on edit (SPEC, Versioning): a materialization whose materialize-sqlserver
// image carries an older `vN` tag is moved to the current version when its spec is edited. Tags that
// are not `vN` (dev, latest, digests) are left alone: they name no older version.

/** Current version of each connector whose older versions are upgraded on edit (connectors/<name>/VERSION). */
export const CURRENT_CONNECTOR_VERSIONS: Record<string, string> = { 'materialize-sqlserver': 'v2' };

export interface ImageUpgrade { connector: string; image: string; from: string; to: string }

/** The upgraded image when `image` is an older `vN` tag of a connector in CURRENT_CONNECTOR_VERSIONS; else null. */
export function upgradeImage(image: string): ImageUpgrade | null {
  const m = /^(?<repo>(?:.*\/)?(?<name>[^/:@]+)):(?<tag>v(?<major>[0-9]+)(?:[.-][0-9A-Za-z.-]*)?)$/.exec(image);
  if (!m?.groups) return null;
  const { repo, name, tag, major } = m.groups as { repo: string; name: string; tag: string; major: string };
  const current = CURRENT_CONNECTOR_VERSIONS[name];
  if (current === undefined) return null;
  if (Number(major) >= Number(current.slice(1))) return null;
  return { connector: name, image: `${repo}:${current}`, from: tag, to: current };
}
