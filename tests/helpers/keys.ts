/**
 * Ed25519 test keys and a sealed episode that holds a decision (a paused run,
 * approved and resumed), for the signing and attestation tests.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createHash, createPublicKey } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cli, REPO } from "./cli.ts";

/**
 * The key id of a public key file, computed here without noema's code:
 * `ed25519:` and 16 hex digits of the sha256 of its SPKI DER.
 *
 * @example
 * ```ts
 * import { keyIdOf } from "./helpers/keys.ts";
 * keyIdOf("/tmp/k.pub"); // "ed25519:…"
 * ```
 */
export function keyIdOf(publicKeyFile: string): string {
  const der = createPublicKey(readFileSync(publicKeyFile, "utf8")).export({ type: "spki", format: "der" });
  return `ed25519:${createHash("sha256").update(der).digest("hex").slice(0, 16)}`;
}

/**
 * Runs examples/sql-vetoed.jsonc paused on its veto, approves it as `by` and
 * resumes it to the end; returns its episode id. `env` carries the root and
 * the signing settings.
 *
 * @example
 * ```ts
 * import { decidedEpisode } from "./helpers/keys.ts";
 * const id = decidedEpisode({ NOEMA_ROOT: "/tmp/r", NOEMA_SIGNING_KEY_FILE: "/tmp/k" });
 * ```
 */
export function decidedEpisode(env: Record<string, string>, by = "ana"): string {
  const run = cli(["run", join(REPO, "examples", "sql-vetoed.jsonc"), "--pause-on-veto", "-q"], { env });
  assert.equal(run.code, 4, run.stderr); // paused
  const id = run.stdout.trim();
  const approve = cli(["approve", id, "--by", by], { env });
  assert.equal(approve.code, 0, approve.stderr);
  const resumed = cli(["resume", id], { env });
  assert.ok(resumed.code === 0 || resumed.code === 1, resumed.stderr); // the scripted SQL may fail: sealed either way
  return id;
}

/**
 * The hex sha256 of a file's bytes, computed without noema's code.
 *
 * @example
 * ```ts
 * import { sha256Hex } from "./helpers/keys.ts";
 * sha256Hex("/etc/hostname");
 * ```
 */
export function sha256Hex(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}
