/**
 * Ed25519 signing keys on disk: generating a pair (`noema keys generate`),
 * reading the private key `NOEMA_SIGNING_KEY_FILE` names, reading a public
 * key for `noema verify --public-key`, and the key id both sides agree on.
 *
 * Files: the private key is PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`),
 * created exclusively with mode 0600; the public key is SPKI PEM
 * (`-----BEGIN PUBLIC KEY-----`), the same file `openssl pkey -pubout`
 * writes. The key id is `ed25519:` and the first 16 hex digits of the
 * sha256 of the public key's SPKI DER bytes, so a verifier computes it from
 * the public key alone.
 *
 * A private key file is refused, naming it, when it is a symlink, not a
 * regular file, readable or writable by group or others, or not an
 * unencrypted Ed25519 private key. It is opened with `O_NOFOLLOW`, so a link
 * planted after the check is refused too.
 *
 * @module
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { Buffer } from "node:buffer";
import type { KeyObject } from "node:crypto";
import { nodeCrypto } from "../builtins.ts";
import { EXIT, NoemaError } from "../errors.ts";
import { FILE_MODE } from "./atomic.ts";

/** The environment variable naming the Ed25519 private key file that signs manifests. */
export const SIGNING_KEY_FILE_ENV = "NOEMA_SIGNING_KEY_FILE";
/** The private key file `noema keys generate` writes when no `--out` is given (its public key: this + `.pub`). */
export const DEFAULT_KEY_FILE = "noema-signing.key";

/** An Ed25519 private key read from a file (it signs). */
export interface Ed25519PrivateKey {
  /** Always `ed25519`. */
  alg: "ed25519";
  /** Key id: `ed25519:` + 16 hex digits of sha256(SPKI DER). */
  kid: string;
  /** The private key. */
  privateKey: KeyObject;
  /** Its public key. */
  publicKey: KeyObject;
}

/** An Ed25519 public key (it verifies). */
export interface Ed25519PublicKey {
  /** Always `ed25519`. */
  alg: "ed25519";
  /** Key id: `ed25519:` + 16 hex digits of sha256(SPKI DER). */
  kid: string;
  /** The public key. */
  publicKey: KeyObject;
}

/**
 * The key id of an Ed25519 public key: `ed25519:` and the first 16 hex
 * digits of the sha256 of its SPKI DER encoding.
 *
 * @example
 * ```ts
 * import { generateKeyPairSync } from "node:crypto";
 * import { ed25519KeyId } from "noema";
 * ed25519KeyId(generateKeyPairSync("ed25519").publicKey); // "ed25519:3f1c…" (16 hex digits)
 * ```
 */
export function ed25519KeyId(publicKey: KeyObject): string {
  const der = publicKey.export({ type: "spki", format: "der" });
  return `ed25519:${nodeCrypto().createHash("sha256").update(der).digest("hex").slice(0, 16)}`;
}

/** A refused key file: a usage error (exit 2) naming it. */
function keyError(path: string, what: string): NoemaError {
  return new NoemaError("bad_key_file", what, { exitCode: EXIT.USAGE, file: path });
}

/** Reads a key file's text without following a symlink; refuses non-regular files (and, for `secret`, open modes). */
function readKeyText(path: string, secret: boolean): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ELOOP") throw keyError(path, "is a symbolic link; a key file must be a regular file");
    if (code === "ENOENT") throw keyError(path, "no such key file");
    throw keyError(path, `cannot be read (${code ?? (e as Error).message})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw keyError(path, "is not a regular file");
    if (secret && (st.mode & 0o077) !== 0) {
      throw keyError(
        path,
        `mode ${(st.mode & 0o777).toString(8).padStart(4, "0")} lets others read or change the private key; ` +
          `run chmod 600 ${path}`,
      );
    }
    if (st.size > 64 * 1024) throw keyError(path, `${st.size} bytes: not a key file`);
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads the Ed25519 private key of a file (PKCS#8 PEM, unencrypted), with
 * the checks of this module. Throws a usage error naming the file.
 *
 * @example
 * ```ts
 * import { readPrivateKeyFile } from "noema";
 * readPrivateKeyFile("noema-signing.key").kid; // "ed25519:…"
 * ```
 */
export function readPrivateKeyFile(path: string): Ed25519PrivateKey {
  const text = readKeyText(path, true);
  let privateKey: KeyObject;
  try {
    privateKey = nodeCrypto().createPrivateKey({ key: text, format: "pem" });
  } catch (e) {
    throw keyError(
      path,
      `not a PEM private key (${(e as Error).message.split("\n")[0]}); make one with noema keys generate`,
    );
  }
  if (privateKey.asymmetricKeyType !== "ed25519") {
    throw keyError(path, `a ${privateKey.asymmetricKeyType ?? "unknown"} key, not an Ed25519 private key`);
  }
  const publicKey = nodeCrypto().createPublicKey(privateKey);
  return { alg: "ed25519", kid: ed25519KeyId(publicKey), privateKey, publicKey };
}

/**
 * Reads an Ed25519 public key (SPKI PEM). A private key is refused: a
 * verifier needs no secret, and should not hold one.
 *
 * @example
 * ```ts
 * import { readPublicKeyFile } from "noema";
 * readPublicKeyFile("noema-signing.key.pub").kid; // "ed25519:…"
 * ```
 */
export function readPublicKeyFile(path: string): Ed25519PublicKey {
  const text = readKeyText(path, false);
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
    throw keyError(path, "is a private key; give the public key (the .pub file) to verify");
  }
  let publicKey: KeyObject;
  try {
    publicKey = nodeCrypto().createPublicKey({ key: text, format: "pem" });
  } catch (e) {
    throw keyError(path, `not a PEM public key (${(e as Error).message.split("\n")[0]})`);
  }
  if (publicKey.asymmetricKeyType !== "ed25519") {
    throw keyError(path, `a ${publicKey.asymmetricKeyType ?? "unknown"} key, not an Ed25519 public key`);
  }
  return { alg: "ed25519", kid: ed25519KeyId(publicKey), publicKey };
}

/**
 * The Ed25519 key of `NOEMA_SIGNING_KEY_FILE`, or null when it is unset or
 * empty. A bad file throws (a usage error naming it).
 *
 * @example
 * ```ts
 * import { ed25519KeyFromEnv } from "noema";
 * ed25519KeyFromEnv({ NOEMA_SIGNING_KEY_FILE: "noema-signing.key" })?.kid; // "ed25519:…"
 * ```
 */
export function ed25519KeyFromEnv(env: Record<string, string | undefined>): Ed25519PrivateKey | null {
  const file = env[SIGNING_KEY_FILE_ENV];
  if (file === undefined || file === "") return null;
  try {
    return readPrivateKeyFile(file);
  } catch (e) {
    if (!(e instanceof NoemaError)) throw e;
    throw new NoemaError(e.code, `${e.detail} (${SIGNING_KEY_FILE_ENV})`, { ...e.location, exitCode: e.exitCode });
  }
}

/** What {@link generateKeyFiles} wrote. */
export interface GeneratedKeys {
  /** The private key file (mode 0600). */
  private_key: string;
  /** The public key file (`<private_key>.pub`). */
  public_key: string;
  /** The key id. */
  kid: string;
}

/** Creates `path` exclusively (never overwriting) with `mode`, and writes `text`; fsynced. */
function createExclusive(path: string, text: string, mode: number): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EEXIST") throw keyError(path, "already exists; noema never overwrites a key (choose --out)");
    throw keyError(path, `cannot be created (${code ?? (e as Error).message})`);
  }
  try {
    const bytes = Buffer.from(text, "utf8");
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
  } catch (e) {
    closeSync(fd);
    rmSync(path, { force: true });
    throw e;
  }
  closeSync(fd);
}

/**
 * Generates an Ed25519 key pair: the private key at `path` (PKCS#8 PEM,
 * mode 0600), the public key at `path.pub` (SPKI PEM, mode 0644). Neither
 * file may exist: nothing is overwritten, and when the public key cannot be
 * written the private key just created is removed.
 *
 * @example
 * ```ts
 * import { generateKeyFiles } from "noema";
 * const { kid, public_key } = generateKeyFiles("/secure/noema-signing.key");
 * ```
 */
export function generateKeyFiles(path: string = DEFAULT_KEY_FILE): GeneratedKeys {
  const pub = `${path}.pub`;
  const { privateKey, publicKey } = nodeCrypto().generateKeyPairSync("ed25519");
  const privatePem = privateKey.export({ type: "pkcs8", format: "pem" }) as string;
  const publicPem = publicKey.export({ type: "spki", format: "pem" }) as string;
  createExclusive(path, privatePem, FILE_MODE);
  try {
    createExclusive(pub, publicPem, 0o644);
  } catch (e) {
    rmSync(path, { force: true });
    throw e;
  }
  return { private_key: path, public_key: pub, kid: ed25519KeyId(publicKey) };
}
