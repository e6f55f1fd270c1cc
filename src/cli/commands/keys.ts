/**
 * `noema keys generate [--out FILE] [--json]`: writes an Ed25519 key pair
 * for signing manifests and attestations: the private key at FILE (default
 * `./noema-signing.key`, PKCS#8 PEM, mode 0600), the public key at
 * `FILE.pub` (SPKI PEM). Neither may exist: a key is never overwritten.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { resolve } from "node:path";
import { DEFAULT_KEY_FILE, generateKeyFiles, SIGNING_KEY_FILE_ENV } from "../../store/ed25519_key.ts";
import { type CliContext, examples } from "../context.ts";

/** Registers `noema keys` and its `generate` subcommand. */
export function registerKeys(program: CommandUnknownOpts, ctx: CliContext): void {
  const keys = program
    .command("keys")
    .summary("Ed25519 signing keys (generate)")
    .description(
      "Ed25519 keys that sign manifests and attestations. Anyone with the public key can check what the private\n" +
        "key signed (noema verify --public-key, noema attest); only the private key can sign.",
    );
  keys
    .command("generate")
    .summary("write a new Ed25519 key pair (private key mode 0600, public key FILE.pub)")
    .description(
      `Write a new Ed25519 key pair: the private key at --out (default ./${DEFAULT_KEY_FILE}), PKCS#8 PEM, mode\n` +
        "0600, and its public key next to it with .pub appended, SPKI PEM. Neither file may exist: a key is never\n" +
        `overwritten. Sign with it by setting ${SIGNING_KEY_FILE_ENV} to the private key file (it never reaches a\n` +
        "child process's environment); give the .pub file to whoever verifies. The key id printed is ed25519: and\n" +
        "16 hex digits of the sha256 of the public key (its SPKI DER), recorded as the signature's kid.",
    )
    .option("--out <file>", `the private key file; the public key is <file>.pub (default: ./${DEFAULT_KEY_FILE})`)
    .option("--json", "print {private_key, public_key, kid} as JSON")
    .addHelpText(
      "after",
      examples(
        ["noema keys generate", `./${DEFAULT_KEY_FILE} and ./${DEFAULT_KEY_FILE}.pub`],
        ["noema keys generate --out ~/.config/noema/ci.key", "somewhere outside the repository"],
        [`${SIGNING_KEY_FILE_ENV}=~/.config/noema/ci.key noema run task.jsonc`, "sign the run's manifest"],
      ) + "\nExit 0 when both files were written, 2 when one exists or cannot be created (nothing is left behind).\n",
    )
    .action((opts) => {
      const written = generateKeyFiles(opts.out ?? DEFAULT_KEY_FILE);
      if (opts.json) {
        ctx.out.json(written);
        return;
      }
      ctx.out.line(`private key: ${written.private_key} (mode 0600: keep it secret)`);
      ctx.out.line(`public key : ${written.public_key}`);
      ctx.out.line(`key id     : ${written.kid}`);
      ctx.out.line(`sign with  : ${SIGNING_KEY_FILE_ENV}=${resolve(written.private_key)} noema run …`);
      ctx.out.line(`verify with: noema verify <episode> --strict --public-key ${written.public_key}`);
    });
}
