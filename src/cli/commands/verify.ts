/**
 * `noema verify <episode | dir | manifest.json> [--json] [--strict] [--public-key FILE]`
 * (the episode as an id, a unique id prefix or `last`):
 * re-hashes every artifact against `manifest.json` and checks the manifest's
 * signature: HMAC when `NOEMA_SIGNING_KEY` is set, Ed25519 with the public
 * key `--public-key` names (no secret needed).
 *
 * Exit codes (as the reference system's `artifacts verify`): 0 ok (warnings
 * included), 2 verification error (tampered) or usage error (`--strict`
 * without a key, a bad public key file), 3 missing manifest or files, 4
 * signature error.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { type IntegrityReport, verifyArtifacts } from "../../store/integrity.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { resolveEpisodeRef } from "../episode_ref.ts";
import { usageError } from "../errors.ts";
import { shownLine } from "../output.ts";
import { readPublicKeyFile } from "../../store/ed25519_key.ts";
import { type ManifestVerifyKey, SIGNING_KEY_ENV, SIGNING_KID_ENV, signingKeyFromEnv } from "../../store/signing.ts";

/**
 * The plain-text report, one line per entry.
 *
 * @example
 * ```ts
 * import { verifyArtifacts } from "../../store/integrity.ts";
 * import { reportLines } from "./verify.ts";
 * console.log(reportLines(verifyArtifacts("ep_01K9RBBMXXRSFWR49SXFGF4SPR")).join("\n"));
 * ```
 */
export function reportLines(r: IntegrityReport): string[] {
  const sig = r.signature.status === "valid"
    ? `valid (${r.signature.alg ?? "hs256"}, kid ${r.signature.kid})`
    : r.signature.status === "unchecked"
    ? r.signature.alg === "ed25519"
      ? `not checked (signed with Ed25519 key ${r.signature.kid}; give its public key with --public-key FILE)`
      : `not checked (signed with kid ${r.signature.kid}; NOEMA_SIGNING_KEY is not set)`
    : r.signature.status === "bad_signature"
    ? `BAD (${r.signature.message})`
    : "unsigned";
  const errors = r.issues.filter((i) => i.severity === "error").length;
  const warnings = r.issues.length - errors;
  const lines = [
    "Artifact verification",
    `manifest : ${r.manifest}`,
    `status   : ${r.status}`,
    `files    : ${r.files.filter((f) => f.expected !== null).length}`,
    `signature: ${sig}`,
    `duration : ${r.duration_ms.toFixed(2)} ms`,
    `issues   : ${
      r.issues.length === 0 ? "none" : [
        errors && `${errors} error${errors === 1 ? "" : "s"}`,
        warnings && `${warnings} warning${warnings === 1 ? "" : "s"}`,
      ].filter(Boolean).join(", ")
    }`,
  ];
  if (r.files.length > 0) {
    lines.push("files detail:");
    for (const f of r.files) {
      const why = r.issues.filter((i) => i.file === f.name);
      lines.push(`- ${f.name}: ${f.status}${f.status === "ok" ? "" : ` (${why.map((i) => i.message).join("; ")})`}`);
    }
  }
  const other = r.issues.filter((i) => !r.files.some((f) => f.name === i.file));
  if (other.length > 0) {
    lines.push("issues detail:");
    for (const i of other) {
      lines.push(`- ${i.file}: ${i.kind}${i.severity === "warning" ? " (warning)" : ""}: ${i.message}`);
    }
  }
  return lines.map(shownLine); // a planted file name shows as it is, on its line
}

/** Registers `noema verify`. */
export function registerVerify(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("verify")
    .summary("re-hash artifacts against manifest.json, check its signature")
    .description(
      "Re-hash every artifact of a finished episode against manifest.json and report tampering (hash_mismatch,\n" +
        "size_mismatch, missing, unlisted, unsafe_path for symlinks, wrong_episode for a manifest of another id).\n" +
        "Every file must be listed (not the lock of a live run), events/learn/state/summary always. When\n" +
        'NOEMA_SIGNING_KEY is set (key id NOEMA_SIGNING_KID, default "default"), the manifest must carry a valid\n' +
        "HMAC-SHA256 signature; with --public-key FILE, a valid Ed25519 signature by that key (checked with the\n" +
        "public key alone, no secret). Unsigned, stripped, signed with another algorithm or key, or ambiguous\n" +
        "(repeated keys) is a signature error (4).",
    )
    .argument(
      "<target>",
      "episode id, unique id prefix, 'last', path to an episode directory, or path to its manifest.json",
    )
    .option("--json", "print the report as JSON")
    .option(
      "--strict",
      "require a valid signature, checked with NOEMA_SIGNING_KEY or --public-key; without either, a usage error " +
        "(exit 2)",
    )
    .option(
      "--public-key <file>",
      "check an Ed25519 signature with this public key (SPKI PEM, the .pub file of noema keys generate)",
    )
    .addHelpText(
      "after",
      examples(
        ["noema verify ep_01K9RBBMXXRSFWR49SXFGF4SPR", "hashes and sizes of every file"],
        ["noema verify last", "the newest episode"],
        ["NOEMA_SIGNING_KEY=… noema verify ep_01K9… --strict", "also require a valid HMAC signature"],
        ["noema verify ep_01K9… --strict --public-key noema-signing.key.pub", "require a valid Ed25519 signature"],
        ["noema verify ep_01K9… --json | jq .issues", "the problems as JSON"],
      ) +
        "\nExit codes: 0 ok (warnings included), 2 verification error (tampered) or usage error (e.g. --strict\n" +
        "without NOEMA_SIGNING_KEY or --public-key: a signature cannot be checked without a key; a public key file\n" +
        "that is not an Ed25519 public key), 3 missing manifest or files,\n" +
        "4 signature error. When several apply, the highest wins.\n",
    )
    .action((target, opts, cmd) => {
      const g = globalOptions(cmd);
      const keys: ManifestVerifyKey[] = [];
      const hmac = signingKeyFromEnv();
      if (hmac !== null) keys.push(hmac);
      if (opts.publicKey !== undefined) keys.push(readPublicKeyFile(opts.publicKey));
      if (opts.strict && keys.length === 0) {
        // Without the key every signed manifest would read "unchecked" and fail: tampered and untouched alike.
        throw usageError(
          `--strict needs the signing key to check signatures: set ${SIGNING_KEY_ENV} (and ${SIGNING_KID_ENV} ` +
            'unless the key id is "default"), give --public-key FILE for an Ed25519 signature, or leave --strict out',
        );
      }
      const report = verifyArtifacts(resolveEpisodeRef(target, g), { ...g, strict: opts.strict === true, key: keys });
      if (opts.json) ctx.out.json(report);
      else for (const l of reportLines(report)) ctx.out.line(l);
      ctx.exitCode = report.exit_code;
    });
}
