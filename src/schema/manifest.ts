/**
 * `manifest.json` (`manifest/1.0`): the final inventory of a terminal run,
 * written last, so its hashes are final. The contract does not show it; noema
 * follows the reference system.
 *
 * @module
 */
import * as v from "valibot";
import { CONTRACT_VERSIONS } from "../version.ts";
import { Count, looseObject, Sha256Digest, Timestamp } from "./common.ts";
import type { SchemaProblem } from "./problems.ts";
import { toProblems } from "./problems.ts";

/** File kinds noema writes. Readers accept any string. */
export const FILE_KINDS = [
  "events",
  "learn",
  "state",
  "summary",
  "snapshot",
  "checkpoint",
  "approval",
  "attachment",
  "model",
  "custom",
] as const;

/**
 * One file entry of a manifest.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ManifestFile } from "./manifest.ts";
 * v.parse(ManifestFile, { name: "events.jsonl", kind: "events", size_bytes: 0, sha256: "sha256:" + "e3".repeat(32) });
 * ```
 */
export const ManifestFile = looseObject({
  name: v.pipe(v.string(), v.description("Path relative to the episode directory (POSIX separators).")),
  kind: v.pipe(v.string(), v.description(`One of ${FILE_KINDS.join(", ")}; readers accept any string.`)),
  size_bytes: Count,
  sha256: v.pipe(Sha256Digest, v.description('"sha256:" and the hex digest of the raw file bytes.')),
});
/** One file entry of a manifest. */
export type ManifestFile = v.InferOutput<typeof ManifestFile>;

/**
 * One plugin (policy, adapter, planner) that took part in the run.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ManifestPlugin } from "./manifest.ts";
 * v.parse(ManifestPlugin, { id: "SqlGuard@1.0", kind: "policy", path: "/p/sql-guard.ts", sha256: "sha256:" + "0".repeat(64) });
 * ```
 */
export const ManifestPlugin = looseObject({
  id: v.pipe(v.string(), v.description("Plugin id, e.g. SqlGuard@1.0 or adapter:shell.")),
  kind: v.pipe(v.string(), v.description("policy, adapter, planner or assertion.")),
  path: v.nullable(v.pipe(v.string(), v.description("Absolute path of the plugin file; null when built in."))),
  sha256: v.nullable(Sha256Digest),
});
/** One plugin entry of a manifest. */
export type ManifestPlugin = v.InferOutput<typeof ManifestPlugin>;

/**
 * `manifest.json`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { Manifest } from "./manifest.ts";
 * v.parse(Manifest, { schema_version: "manifest/1.0", episode_id: "ep_1", files: [] });
 * ```
 */
export const Manifest = looseObject({
  schema_version: v.literal(CONTRACT_VERSIONS.manifest),
  episode_id: v.string(),
  created_at: v.optional(Timestamp),
  files: v.pipe(
    v.array(ManifestFile),
    v.description("Every artifact of the episode except manifest.json itself, sorted by name."),
  ),
  plugins: v.optional(v.pipe(v.array(ManifestPlugin), v.description("Plugins that took part in the run."))),
  signature: v.optional(v.nullable(v.pipe(
    looseObject({
      alg: v.pipe(
        v.picklist(["hs256", "ed25519"]),
        v.description("hs256 (HMAC-SHA256, a shared secret) or ed25519 (a private key; checked with its public key)."),
      ),
      kid: v.pipe(
        v.string(),
        v.description(
          'Id of the signing key: for hs256 NOEMA_SIGNING_KID (default "default"); for ed25519 "ed25519:" and the ' +
            "first 16 hex digits of the sha256 of the public key's SPKI DER.",
        ),
      ),
      value: v.pipe(
        v.string(),
        v.description("Unpadded base64url of the HMAC-SHA256 (32 bytes) or of the Ed25519 signature (64 bytes)."),
      ),
    }),
    v.description(
      "Optional signature; null when unsigned. The signed bytes are the UTF-8 of the RFC 8785 canonical JSON of this " +
        "manifest without its signature member. hs256: value = base64url(HMAC-SHA256(key, bytes)), the key being " +
        "the UTF-8 bytes of NOEMA_SIGNING_KEY. ed25519: value = base64url(Ed25519 signature of bytes) under the " +
        "private key file NOEMA_SIGNING_KEY_FILE names. `noema verify` checks it. See docs/security.md.",
    ),
  ))),
});
/** `manifest.json`. */
export type Manifest = v.InferOutput<typeof Manifest>;

/**
 * Checks a parsed manifest: schema, files sorted by name, unique, and never
 * listing `manifest.json` itself.
 *
 * @example
 * ```ts
 * import { checkManifest } from "./manifest.ts";
 * checkManifest({ schema_version: "manifest/1.0", episode_id: "e", files: [] }); // []
 * ```
 */
export function checkManifest(value: unknown): SchemaProblem[] {
  const r = v.safeParse(Manifest, value);
  if (!r.success) return toProblems(r.issues);
  const problems: SchemaProblem[] = [];
  const names = r.output.files.map((f) => f.name);
  names.forEach((name, i) => {
    if (name === "manifest.json") {
      problems.push({ path: `files[${i}].name`, message: "the manifest must not list itself" });
    }
    if (i > 0 && names[i - 1] >= name) {
      problems.push({
        path: `files[${i}].name`,
        message: `files must be sorted by name and unique ("${names[i - 1]}" before "${name}")`,
      });
    }
  });
  return problems;
}
