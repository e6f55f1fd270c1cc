/**
 * Artifact integrity: re-hashing an episode's files against its
 * `manifest.json` and checking the manifest's optional signature, HMAC or
 * Ed25519 (`noema verify`).
 *
 * Exit codes follow the reference system's `artifacts verify`: 0 ok (warnings
 * included), 2 verification error (a file changed, was added, or the manifest
 * is malformed or names another episode), 3 missing manifest, listed or
 * required files, 4 signature error. When several apply, the highest wins.
 *
 * What verify holds to:
 * - every entry of the episode directory is listed (symlinks and other
 *   non-regular entries are errors; only the lock of a live run is left out,
 *   a stale lock is a warning);
 * - the required artifacts (events, learn, state, summary) are listed and
 *   present: deleting one with its manifest entry is still caught;
 * - the manifest's `episode_id` is the directory's name, so a signed episode
 *   copied under another id fails;
 * - with a key given (`NOEMA_SIGNING_KEY`, or an Ed25519 public key:
 *   `--public-key`), a manifest must carry a valid signature, `--strict` or
 *   not: unsigned, stripped, signed with the other algorithm, junk after the
 *   value, or repeated keys (whose signed bytes are ambiguous) are signature
 *   errors.
 *
 * @module
 */
import { hostname } from "node:os";
import { existsSync, lstatSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { NoemaError } from "../errors.ts";
import { checkManifest } from "../schema/manifest.ts";
import { sha256File } from "./hash.ts";
import { readJsonFile } from "./json_file.ts";
import { scanJson } from "./json_scan.ts";
import { ARTIFACTS, locateEpisode, type RootOptions } from "./layout.ts";
import { clearStaleLock, isLockName, LOCK_FILE, lockStatus, onlyALock } from "./lock.ts";
import { listEpisodeEntries } from "./manifest.ts";
import { type ManifestVerifyKey, type SignatureCheck, signingKeyFromEnv, verifyManifestSignature } from "./signing.ts";

/** Exit codes of `noema verify`. */
export const VERIFY_EXIT = {
  /** Every file matches (warnings allowed). */
  OK: 0,
  /** Tampering: a hash or size differs, a file is unlisted, or the manifest is malformed. */
  TAMPERED: 2,
  /** `manifest.json` or a listed file is missing. */
  MISSING: 3,
  /** The signature does not verify (or `--strict` and there is none to verify). */
  SIGNATURE: 4,
} as const;

/** What can be wrong. */
export type IntegrityIssueKind =
  | "hash_mismatch"
  | "size_mismatch"
  | "missing"
  | "unlisted"
  | "unsafe_path"
  | "bad_manifest"
  | "wrong_episode"
  | "stale_lock"
  | "held_lock"
  | "missing_manifest"
  | "unsigned"
  | "bad_signature"
  | "unchecked_signature";

/** One problem found. */
export interface IntegrityIssue {
  /** What kind of problem. */
  kind: IntegrityIssueKind;
  /** The file it is about (relative to the episode directory). */
  file: string;
  /** In words. */
  message: string;
  /** `error` counts for the exit code; `warning` does not (unless strict). */
  severity: "error" | "warning";
}

/** The check of one listed file. */
export interface FileCheck {
  /** Path relative to the episode directory. */
  name: string;
  /** `ok` or the issue kind. */
  status: "ok" | "hash_mismatch" | "size_mismatch" | "missing" | "unsafe_path" | "unlisted";
  /** Size and digest in the manifest (null for unlisted files). */
  expected: { size_bytes: unknown; sha256: unknown } | null;
  /** Size and digest on disk (null when missing). */
  actual: { size_bytes: number; sha256: string } | null;
}

/** The report of {@link verifyArtifacts}. */
export interface IntegrityReport {
  /** The episode directory. */
  episode_dir: string;
  /** The manifest path. */
  manifest: string;
  /** `episode_id` from the manifest (or the directory name). */
  episode_id: string;
  /** `ok`, `tampered`, `missing` or `bad_signature`. */
  status: "ok" | "tampered" | "missing" | "bad_signature";
  /** The exit code `noema verify` uses. */
  exit_code: 0 | 2 | 3 | 4;
  /** One entry per listed file, then unlisted files. */
  files: FileCheck[];
  /** The signature check. */
  signature: SignatureCheck;
  /** Every problem (errors and warnings). */
  issues: IntegrityIssue[];
  /** Wall time, milliseconds. */
  duration_ms: number;
  /** Whether `strict` was on. */
  strict: boolean;
}

/** Options for {@link verifyArtifacts}. */
export interface VerifyArtifactsOptions extends RootOptions {
  /** Treat warnings (unsigned, signature not checkable) as signature errors (with a key set, they are anyway). */
  strict?: boolean;
  /**
   * The key(s) to check signatures with: an HMAC key and/or Ed25519 public keys.
   * @default {the key from NOEMA_SIGNING_KEY, or none}
   */
  key?: ManifestVerifyKey | readonly ManifestVerifyKey[] | null;
}

/** Why a manifest file name is unsafe to join to the episode directory (NUL, absolute, `..`), or null. */
function unsafeName(name: string): string | null {
  if (name.includes("\0")) return "contains a NUL byte";
  if (name.startsWith("/") || /^[A-Za-z]:/.test(name) || name.startsWith("\\")) return "is absolute";
  if (name.split(/[\\/]/).includes("..")) return "contains '..'";
  return null;
}

/** The episode directory for a target: an episode id, a directory, or a manifest path. */
function targetDir(target: string, options: RootOptions): string {
  if (basename(target) === ARTIFACTS.manifest && existsSync(target) && statSync(target).isFile()) {
    return dirname(resolve(target));
  }
  return locateEpisode(target, options).dir;
}

/**
 * Re-hashes every file of an episode against its `manifest.json` and checks
 * the signature. Never throws for tampering; throws a {@link NoemaError} only
 * when the target itself cannot be found.
 *
 * @example
 * ```ts
 * import { verifyArtifacts } from "./integrity.ts";
 * const r = verifyArtifacts("ep_01K9RBBMXXRSFWR49SXFGF4SPR", { root: ".noema" });
 * if (r.exit_code !== 0) console.log(r.issues.map((i) => `${i.file}: ${i.kind}`));
 * ```
 */
export function verifyArtifacts(target: string, options: VerifyArtifactsOptions = {}): IntegrityReport {
  const t0 = performance.now();
  const dir = targetDir(target, options);
  const manifestPath = join(dir, ARTIFACTS.manifest);
  const strict = options.strict === true;
  const given = options.key === undefined ? signingKeyFromEnv() : options.key;
  const key: readonly ManifestVerifyKey[] = given === null
    ? []
    : Array.isArray(given)
    ? given as readonly ManifestVerifyKey[]
    : [given as ManifestVerifyKey];
  const issues: IntegrityIssue[] = [];
  const files: FileCheck[] = [];
  let signature: SignatureCheck = { status: "unsigned", kid: null, message: null };
  let episodeId = basename(dir);
  const add = (kind: IntegrityIssueKind, file: string, message: string, severity: "error" | "warning" = "error") =>
    issues.push({ kind, file, message, severity });

  const { manifest, duplicates } = readManifest(manifestPath, add);
  if (manifest) {
    if (typeof manifest.episode_id === "string") episodeId = manifest.episode_id;
    for (const p of checkManifest(manifest)) {
      add("bad_manifest", ARTIFACTS.manifest, `${p.path ? p.path + ": " : ""}${p.message}`);
    }
    const listed = checkListed(dir, manifest, files, add);
    checkRequired(dir, listed, files, add);
    checkUnlisted(dir, listed, files, add, strict);
    checkEpisodeId(dir, manifest, add);
    signature = checkSignature(manifest, duplicates, key);
    addSignatureIssue(signature, strict, key, add);
  }

  const { exit_code, status } = verdict(issues);
  return {
    episode_dir: dir,
    manifest: manifestPath,
    episode_id: episodeId,
    status,
    exit_code,
    files,
    signature,
    issues,
    duration_ms: Math.round((performance.now() - t0) * 100) / 100,
    strict,
  };
}

/** Adds one issue to the report being built. */
type AddIssue = (kind: IntegrityIssueKind, file: string, message: string, severity?: "error" | "warning") => void;

/**
 * Reads `manifest.json` and counts its repeated keys (each one a `bad_manifest` issue); a missing or
 * unparsable manifest is an issue and gives no manifest.
 */
function readManifest(
  manifestPath: string,
  add: AddIssue,
): { manifest: Record<string, unknown> | null; duplicates: number } {
  let manifest: Record<string, unknown> | null = null;
  let duplicates = 0;
  if (!existsSync(manifestPath)) {
    add(
      "missing_manifest",
      ARTIFACTS.manifest,
      "manifest.json does not exist (the run is not terminal, or the file was deleted)",
    );
  } else {
    try {
      manifest = readJsonFile(manifestPath, ARTIFACTS.manifest);
      for (const d of scanJson(readFileSync(manifestPath, "utf8")).duplicates) {
        duplicates++;
        add("bad_manifest", ARTIFACTS.manifest, `line ${d.line}: ${d.path ? d.path + "." : ""}${d.key}: duplicate key`);
      }
    } catch (e) {
      add("bad_manifest", ARTIFACTS.manifest, e instanceof NoemaError ? e.message : String(e));
    }
  }
  return { manifest, duplicates };
}

/** Checks every file the manifest lists (entries without a string name are left to `checkManifest`); returns the listed names. */
function checkListed(dir: string, manifest: Record<string, unknown>, files: FileCheck[], add: AddIssue): Set<string> {
  const listed = new Set<string>();
  const entries = Array.isArray(manifest.files) ? manifest.files : [];
  for (const [i, raw] of entries.entries()) {
    const f = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
    if (typeof f.name !== "string") continue; // reported by checkManifest
    listed.add(f.name);
    checkListedFile(dir, i, f, files, add);
  }
  return listed;
}

/** Checks one listed file (`files[i]`, whose name is a string): a safe name, a regular file, then its size and digest. */
function checkListedFile(
  dir: string,
  i: number,
  f: Record<string, unknown>,
  files: FileCheck[],
  add: AddIssue,
): void {
  const name = f.name as string;
  const expected = { size_bytes: f.size_bytes, sha256: f.sha256 };
  const unsafe = unsafeName(name);
  if (unsafe) {
    files.push({ name, status: "unsafe_path", expected, actual: null });
    add("unsafe_path", name, `files[${i}].name ${unsafe}; refused`);
    return;
  }
  const path = join(dir, name);
  let st;
  try {
    st = lstatSync(path);
  } catch {
    files.push({ name, status: "missing", expected, actual: null });
    add("missing", name, "listed in the manifest but does not exist");
    return;
  }
  if (!st.isFile()) {
    files.push({ name, status: "unsafe_path", expected, actual: null });
    add(
      "unsafe_path",
      name,
      st.isSymbolicLink() ? "is a symlink; artifacts are regular files" : "is not a regular file",
    );
    return;
  }
  const actual = sha256File(path);
  if (actual.sha256 !== f.sha256) {
    const sizeDiffers = typeof f.size_bytes === "number" && actual.size_bytes !== f.size_bytes;
    files.push({ name, status: sizeDiffers ? "size_mismatch" : "hash_mismatch", expected, actual });
    if (sizeDiffers) {
      add("size_mismatch", name, `${actual.size_bytes} bytes, manifest says ${String(f.size_bytes)}`);
    }
    add("hash_mismatch", name, "sha256 differs from manifest");
  } else if (actual.size_bytes !== f.size_bytes) {
    files.push({ name, status: "size_mismatch", expected, actual });
    add("size_mismatch", name, `${actual.size_bytes} bytes, manifest says ${String(f.size_bytes)}`);
  } else {
    files.push({ name, status: "ok", expected, actual });
  }
}

/** A manifest whose `episode_id` is not the directory's name: a copied or renamed episode. */
function checkEpisodeId(dir: string, manifest: Record<string, unknown>, add: AddIssue): void {
  if (typeof manifest.episode_id === "string" && manifest.episode_id !== basename(dir)) {
    add(
      "wrong_episode",
      ARTIFACTS.manifest,
      `episode_id is ${JSON.stringify(manifest.episode_id)}, but the directory is ${
        JSON.stringify(basename(dir))
      } (a copied or renamed episode)`,
    );
  }
}

/**
 * The issue a signature check raises, if any: a bad signature is an error; an unsigned manifest is an error
 * under `--strict` or with a key set, else a warning; an unchecked one is an error only under `--strict`.
 */
function addSignatureIssue(
  signature: SignatureCheck,
  strict: boolean,
  key: readonly ManifestVerifyKey[],
  add: AddIssue,
): void {
  if (signature.status === "bad_signature") {
    add("bad_signature", ARTIFACTS.manifest, signature.message ?? "bad signature");
  } else if (signature.status === "unsigned") {
    const required = strict || key.length > 0;
    add(
      "unsigned",
      ARTIFACTS.manifest,
      strict
        ? "the manifest is not signed (--strict requires a signature)"
        : key.some((k) => "key" in k)
        ? "the manifest is not signed, but NOEMA_SIGNING_KEY is set: an unsigned or stripped manifest is refused"
        : key.length > 0
        ? "the manifest is not signed, but a public key is given: an unsigned or stripped manifest is refused"
        : "the manifest is not signed",
      required ? "error" : "warning",
    );
  } else if (signature.status === "unchecked") {
    add(
      "unchecked_signature",
      ARTIFACTS.manifest,
      signature.message ?? "signature not checked",
      strict ? "error" : "warning",
    );
  }
}

/** The exit code and status the errors among the issues give: signature 4, missing 3, any other error 2, else 0. */
function verdict(issues: IntegrityIssue[]): Pick<IntegrityReport, "exit_code" | "status"> {
  const errors = issues.filter((i) => i.severity === "error");
  const has = (...kinds: IntegrityIssueKind[]) => errors.some((i) => kinds.includes(i.kind));
  const exit_code = has("bad_signature", "unsigned", "unchecked_signature")
    ? 4
    : has("missing", "missing_manifest")
    ? 3
    : errors.length > 0
    ? 2
    : 0;
  const status = exit_code === 4 ? "bad_signature" : exit_code === 3 ? "missing" : exit_code === 2 ? "tampered" : "ok";
  return { exit_code, status };
}

/** The artifacts every terminal episode has: missing from the manifest and the disk, they are still caught. */
const REQUIRED = [ARTIFACTS.events, ARTIFACTS.learn, ARTIFACTS.state, ARTIFACTS.summary];

/** Every required artifact the manifest does not list is an issue (and a file check when it is also gone from disk). */
function checkRequired(dir: string, listed: Set<string>, files: FileCheck[], add: AddIssue): void {
  for (const name of REQUIRED) {
    if (listed.has(name)) continue;
    if (!existsSync(join(dir, name))) files.push({ name, status: "missing", expected: null, actual: null });
    add("missing", name, "a required artifact is not listed in the manifest");
  }
}

/** Every entry on disk that the manifest does not list (the lock of a live run excepted). */
function checkUnlisted(dir: string, listed: Set<string>, files: FileCheck[], add: AddIssue, strict = false): void {
  for (const e of listEpisodeEntries(dir)) {
    if (listed.has(e.name)) continue;
    // A lock (or its write's temp name) is left out only when it is a lock and nothing else: a file planted under
    // that name, or one that carries more than a lock does, is unlisted like any other.
    if (isLockName(e.name) && (e.type !== "file" || onlyALock(dir, e.name))) {
      const status = e.type === "file" ? lockStatus(dir) : null;
      if (status?.state === "held" && status.info !== null && status.info.host !== hostname()) {
        // Another host's lock cannot be told live or stale; a sealed episode has no writer, and the lock's bytes are
        // not covered by the manifest: said, so that nothing rides in it unseen.
        const message = `a lock held on another host (${status.info.host}), not covered by the manifest`;
        add("held_lock", e.name, message, strict ? "error" : "warning"); // --strict: nothing unsigned in a sealed run
        continue;
      }
      if (status?.state === "held") continue; // a live run (or a contender) on this host holds it
      // A sealed episode (it has a manifest) whose lock's owner is gone: its writer was killed after sealing.
      if (e.type === "file" && e.name === LOCK_FILE && clearStaleLock(dir)) continue;
      if (e.type === "file") {
        add("stale_lock", e.name, "a lock left by a process that is gone (not an artifact)", "warning");
        continue;
      }
    }
    if (e.type !== "file") {
      files.push({ name: e.name, status: "unsafe_path", expected: null, actual: null });
      add(
        "unsafe_path",
        e.name,
        `${e.type === "symlink" ? "a symbolic link" : "not a regular file"}, not listed in the manifest`,
      );
      continue;
    }
    files.push({ name: e.name, status: "unlisted", expected: null, actual: sha256File(join(dir, e.name)) });
    add("unlisted", e.name, "present in the episode directory but not listed in the manifest");
  }
}

/** The signature check; a signed manifest with repeated keys is a bad signature (which value was signed is ambiguous). */
function checkSignature(
  manifest: Record<string, unknown>,
  duplicates: number,
  key: readonly ManifestVerifyKey[],
): SignatureCheck {
  const signature = verifyManifestSignature(manifest, key);
  if (duplicates > 0 && signature.status !== "unsigned") {
    return {
      status: "bad_signature",
      kid: signature.kid,
      message: "the signed manifest repeats keys: which value was signed is ambiguous",
    };
  }
  return signature;
}
