/**
 * Writing `manifest.json`: the inventory of every artifact of a terminal
 * run, with sizes and `sha256:` digests of the raw bytes. Written last.
 *
 * @module
 */
import { lstatSync, readdirSync, rmSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { CONTRACT_VERSIONS } from "../version.ts";
import type { Manifest, ManifestFile, ManifestPlugin } from "../schema/manifest.ts";
import { type StagedFile, stageFile, writeJsonAtomic } from "./atomic.ts";
import { type FileDigest, sha256File } from "./hash.ts";
import { ARTIFACTS, refuseSymlinkedArtifacts } from "./layout.ts";
import { episodeRoot } from "./nofollow.ts";
import { manifestKeyFromEnv, type ManifestSigningKey, signManifest } from "./signing.ts";

/**
 * The manifest kind of an artifact, by its path in the episode directory.
 *
 * @example
 * ```ts
 * import { fileKind } from "noema";
 * fileKind("snapshots/pre.json"); // "snapshot"
 * ```
 */
export function fileKind(name: string): string {
  switch (name) {
    case ARTIFACTS.events:
      return "events";
    case ARTIFACTS.learn:
      return "learn";
    case ARTIFACTS.state:
      return "state";
    case ARTIFACTS.summary:
      return "summary";
  }
  if (name === "model.jsonl") return "model";
  if (name.startsWith("snapshots/")) return "snapshot";
  if (name.startsWith("checkpoints/")) return "checkpoint";
  if (name.startsWith("approvals/")) return "approval";
  if (name.startsWith("attachments/")) return "attachment";
  return "custom";
}

function isTransient(name: string): boolean {
  return name.includes(".tmp-") || name.endsWith(".lock") || name === "lock";
}

/**
 * Lists the artifact files of an episode directory (relative POSIX paths,
 * sorted), leaving out `manifest.json`, temp files and locks.
 *
 * @example
 * ```ts
 * import { listArtifactFiles } from "noema";
 * listArtifactFiles(".noema/episodes/ep_1"); // ["events.jsonl", "learn.jsonl", "state.json", "summary.json"]
 * ```
 */
export function listArtifactFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (sub: string) => {
    for (const d of readdirSync(join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${d.name}` : d.name;
      if (d.isDirectory()) walk(rel);
      else if (d.isFile() && rel !== ARTIFACTS.manifest && !isTransient(d.name)) out.push(rel);
    }
  };
  walk("");
  return out.sort();
}

/** One entry of an episode directory, as {@link listEpisodeEntries} sees it (links are not followed). */
export interface EpisodeEntry {
  /** Relative POSIX path. */
  name: string;
  /** `file`: a regular file; `symlink`: a symbolic link; `other`: a FIFO, socket or device. */
  type: "file" | "symlink" | "other";
}

/**
 * Every entry of an episode directory except `manifest.json` and the
 * directories themselves, transient files included, without following
 * symbolic links (a symlinked directory is one `symlink` entry). What
 * `verify` compares with the manifest's list.
 *
 * @example
 * ```ts
 * import { listEpisodeEntries } from "./manifest.ts";
 * listEpisodeEntries(".noema/episodes/ep_1").filter((e) => e.type !== "file");
 * ```
 */
export function listEpisodeEntries(dir: string): EpisodeEntry[] {
  const out: EpisodeEntry[] = [];
  const walk = (sub: string) => {
    for (const d of readdirSync(join(dir, sub), { withFileTypes: true })) {
      const name = sub ? `${sub}/${d.name}` : d.name;
      if (d.isDirectory()) walk(name);
      else if (name !== ARTIFACTS.manifest) {
        out.push({ name, type: d.isFile() ? "file" : d.isSymbolicLink() ? "symlink" : "other" });
      }
    }
  };
  walk("");
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Removes temp files (`*.tmp-*`) that killed writers left in an episode,
 * except the lock's own claim files. Called by the sealer, which holds the
 * lock: no other writer is active.
 */
function removeLeftoverTemps(dir: string, keep: ReadonlySet<string> = new Set()): void {
  for (const e of listEpisodeEntries(dir)) {
    const base = e.name.slice(e.name.lastIndexOf("/") + 1);
    if (e.type === "file" && base.includes(".tmp-") && !base.startsWith("lock.") && !keep.has(join(dir, e.name))) {
      rmSync(join(dir, e.name), { force: true });
    }
  }
}

/**
 * Builds and atomically writes `manifest.json` for a terminal run. When a
 * signing key is given, or one is set in the environment
 * (`NOEMA_SIGNING_KEY_FILE`: an Ed25519 signature; else `NOEMA_SIGNING_KEY`,
 * key id `NOEMA_SIGNING_KID`, default `default`: HMAC-SHA256), the manifest
 * carries a `signature` (see `src/store/signing.ts`); otherwise `signature`
 * is `null`.
 * Temp files that killed writers left behind are removed first, so every
 * file in a sealed episode is listed (`verify` reports any other). An episode
 * holding a symbolic link at any depth is refused (an error naming it).
 *
 * @example
 * ```ts
 * import { writeManifest } from "noema";
 * writeManifest(".noema/episodes/ep_1", "ep_1", [], new Date().toISOString());
 * ```
 */
export function writeManifest(
  dir: string,
  episodeId: string,
  plugins: ManifestPlugin[],
  createdAt: string,
  signingKey: ManifestSigningKey | null = manifestKeyFromEnv(),
): Manifest {
  const manifest = buildManifest(dir, episodeId, plugins, createdAt, [], signingKey);
  writeJsonAtomic(join(dir, ARTIFACTS.manifest), manifest, { root: episodeRoot(dir) });
  return manifest;
}

/**
 * Like {@link writeManifest}, for artifacts still staged (`staged`, not yet
 * renamed into place): their digests are taken from their temp files, and
 * the manifest itself is staged too, to be renamed last by `commitStaged`.
 * `known`: digests of files already made (an event log hashed as it was
 * written, see `log_digest.ts`), each used when the file still has its size;
 * any other file is hashed here.
 *
 * @example
 * ```ts
 * import { commitStaged, stageFile } from "./atomic.ts";
 * import { stageManifest } from "./manifest.ts";
 * const summary = stageFile(".noema/episodes/ep_1/summary.json", "{}\n");
 * commitStaged([summary, stageManifest(".noema/episodes/ep_1", "ep_1", [], new Date().toISOString(), [summary])]);
 * ```
 */
export function stageManifest(
  dir: string,
  episodeId: string,
  plugins: ManifestPlugin[],
  createdAt: string,
  staged: readonly StagedFile[],
  signingKey: ManifestSigningKey | null = manifestKeyFromEnv(),
  known: ReadonlyMap<string, FileDigest> = new Map(),
): StagedFile {
  const manifest = buildManifest(dir, episodeId, plugins, createdAt, staged, signingKey, known);
  return stageFile(join(dir, ARTIFACTS.manifest), JSON.stringify(manifest, null, 2) + "\n", { root: episodeRoot(dir) });
}

/** `digest`, while the file at `path` is a regular file of its size; else undefined (the file is hashed). */
function knownDigest(path: string, digest: FileDigest | undefined): FileDigest | undefined {
  if (digest === undefined) return undefined;
  try {
    const st = lstatSync(path);
    return st.isFile() && st.size === digest.size_bytes
      ? { size_bytes: digest.size_bytes, sha256: digest.sha256 }
      : undefined;
  } catch {
    return undefined;
  }
}

/** The manifest of `dir`, with `staged` files listed under their final names (digests of their temp files). */
function buildManifest(
  dir: string,
  episodeId: string,
  plugins: ManifestPlugin[],
  createdAt: string,
  staged: readonly StagedFile[],
  signingKey: ManifestSigningKey | null,
  known: ReadonlyMap<string, FileDigest> = new Map(),
): Manifest {
  refuseSymlinkedArtifacts(dir); // a planted link is never sealed in (verify would call the episode tampered)
  const tmpOf = new Map(staged.map((f) => [relative(dir, f.path).split(sep).join("/"), f.tmp]));
  removeLeftoverTemps(dir, new Set(staged.map((f) => f.tmp)));
  const names = [...new Set([...listArtifactFiles(dir), ...tmpOf.keys()])].sort();
  const files: ManifestFile[] = names.map((name) => ({
    name,
    kind: fileKind(name),
    ...knownDigest(join(dir, name), known.get(name)) ?? sha256File(tmpOf.get(name) ?? join(dir, name)),
  }));
  const manifest: Manifest = {
    schema_version: CONTRACT_VERSIONS.manifest,
    episode_id: episodeId,
    created_at: createdAt,
    files,
    plugins,
    signature: null,
  };
  if (signingKey) manifest.signature = { ...signManifest(manifest, signingKey) };
  return manifest;
}
