/**
 * `noema attest <episode> [--out FILE] [--key FILE] [--json]`: an in-toto
 * attestation of a finished episode (a DSSE envelope signed with Ed25519),
 * printed or written atomically to FILE. The key is `--key`, else the file
 * `NOEMA_SIGNING_KEY_FILE` names. `noema attest --verify FILE --public-key
 * PUB` checks one with the public key alone.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { writeFileAtomic } from "../../store/atomic.ts";
import {
  attestEpisode,
  EPISODE_PREDICATE_TYPE,
  IN_TOTO_PAYLOAD_TYPE,
  subjectMismatches,
  verifyAttestation,
} from "../../store/attestation.ts";
import { readPrivateKeyFile, readPublicKeyFile, SIGNING_KEY_FILE_ENV } from "../../store/ed25519_key.ts";
import { readJsonFile } from "../../store/json_file.ts";
import { scanJson } from "../../store/json_scan.ts";
import { locateEpisode } from "../../store/layout.ts";
import { EXIT } from "../../errors.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { resolveEpisodeRef } from "../episode_ref.ts";
import { usageError } from "../errors.ts";
import { shownLine } from "../output.ts";
import { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";
import process from "node:process";

/**
 * `--verify FILE --public-key PUB [episode]`: prints the check; exit 0 valid, 4 the signature does not verify,
 * 2 the episode given differs from the attested files.
 */
function verifyFile(
  ctx: CliContext,
  file: string,
  opts: { publicKey?: string; json?: boolean },
  episodeDir: string | null,
): void {
  if (opts.publicKey === undefined) throw usageError("--verify needs --public-key FILE (the signer's public key)");
  const key = readPublicKeyFile(opts.publicKey);
  const envelope = readJsonFile(file, file);
  // A key given twice: JSON readers disagree on which one is the envelope's (ours keeps the last), so none is.
  const [repeated] = scanJson(readFileSync(file, "utf8")).duplicates;
  const check = repeated === undefined ? verifyAttestation(envelope, key) : {
    valid: false,
    statement: null,
    message: `line ${repeated.line}: ${repeated.path ? `${repeated.path}.` : ""}${repeated.key}: duplicate key ` +
      "(which value is the envelope's is ambiguous)",
  };
  const episode = check.statement?.predicate?.episode_id ?? null;
  const differences = check.valid && check.statement && episodeDir
    ? subjectMismatches(check.statement, episodeDir)
    : [];
  if (opts.json) {
    ctx.out.json({ file, valid: check.valid, kid: key.kid, episode_id: episode, message: check.message, differences });
  } else if (!check.valid) ctx.out.line(shownLine(`${file}: BAD (${check.message})`));
  else {
    // The statement's words and the episode's file names may hold anything: each shown as it is, on its line.
    ctx.out.line(shownLine(`${file}: valid (ed25519, kid ${key.kid}), episode ${episode}`));
    if (episodeDir) {
      ctx.out.line(shownLine(
        differences.length === 0
          ? `${episodeDir}: every file matches the attestation`
          : `${episodeDir}: differs from the attestation:`,
      ));
      for (const d of differences) ctx.out.line(shownLine(`- ${d}`));
    }
  }
  ctx.exitCode = !check.valid ? EXIT.PAUSED : differences.length > 0 ? EXIT.USAGE : EXIT.OK; // 4 and 2, as verify
}

/** Registers `noema attest`. */
export function registerAttest(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("attest")
    .summary("sign an in-toto attestation of an episode (DSSE, Ed25519)")
    .description(
      "Write an in-toto attestation of a finished episode: a DSSE envelope holding an in-toto Statement v1\n" +
        "whose subject lists every artifact file with its sha256 and whose predicate records the task, the\n" +
        "outcome, the policies and rules with their digests, the verdict counts and each decision with its\n" +
        "authenticated decider (the format: docs/security.md). The episode is verified first: a changed, missing\n" +
        "or unlisted file is refused (exit 2 or 3). It is signed with the Ed25519 key of --key or\n" +
        `${SIGNING_KEY_FILE_ENV}; standard tools (in-toto, cosign, openssl) check it with the public key alone.`,
    )
    .argument("[episode]", "episode id, unique id prefix, 'last', or path to an episode directory")
    .option("--out <file>", "write the envelope to this file (atomically) instead of printing it")
    .option("--key <file>", `the Ed25519 private key (default: $${SIGNING_KEY_FILE_ENV})`)
    .option(
      "--verify <file>",
      "check an attestation file instead (needs --public-key); with an episode, also that its files are the ones attested",
    )
    .option("--public-key <file>", "with --verify: the signer's public key (SPKI PEM)")
    .option("--json", "with --out or --verify: print a JSON summary")
    .addHelpText(
      "after",
      examples(
        [`${SIGNING_KEY_FILE_ENV}=ci.key noema attest last --out ep.intoto.json`, "attest the newest episode"],
        ["noema attest ep_01K9… --key ci.key | jq -r .payload | base64 -d | jq .predicate", "read the predicate"],
        ["noema attest --verify ep.intoto.json --public-key ci.key.pub", "check an attestation"],
        ["noema attest --verify ep.intoto.json --public-key ci.key.pub ep_01K9…", "… and that the episode is the one"],
      ) +
        `\nPayload type: ${IN_TOTO_PAYLOAD_TYPE}; predicate type: ${EPISODE_PREDICATE_TYPE}.\n` +
        "Exit codes: 0 ok, 1 error, 2 usage error (no key, a bad key file) or the episode does not verify\n" +
        "(tampered) or (--verify with an episode) its files differ from the attested ones, 3 its manifest or a\n" +
        "file is missing, 4 (--verify) the attestation does not verify.\n",
    )
    .action((episode, opts, cmd) => {
      if (opts.verify !== undefined) {
        const dir = episode === undefined
          ? null
          : locateEpisode(resolveEpisodeRef(episode, globalOptions(cmd)), globalOptions(cmd)).dir;
        return verifyFile(ctx, opts.verify, opts, dir);
      }
      if (episode === undefined) throw usageError("missing the episode to attest (an id, 'last', or a directory)");
      const keyFile = opts.key ?? process.env[SIGNING_KEY_FILE_ENV];
      if (keyFile === undefined || keyFile === "") {
        throw usageError(
          `no signing key: give --key FILE or set ${SIGNING_KEY_FILE_ENV} (make one with noema keys generate)`,
        );
      }
      const g = globalOptions(cmd);
      const key = readPrivateKeyFile(keyFile);
      const envelope = attestEpisode(resolveEpisodeRef(episode, g), key, g);
      if (opts.out === undefined) {
        ctx.out.line(JSON.stringify(envelope));
        return;
      }
      writeFileAtomic(opts.out, JSON.stringify(envelope, null, 2) + "\n");
      const subjects = JSON.parse(Buffer.from(envelope.payload, "base64").toString("utf8")).subject.length;
      if (opts.json) ctx.out.json({ file: opts.out, keyid: key.kid, predicate_type: EPISODE_PREDICATE_TYPE, subjects });
      else ctx.out.line(`noema: wrote ${opts.out}: ${subjects} files attested, signed by ${key.kid}`);
    });
}
