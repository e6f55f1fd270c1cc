/**
 * Optional signing of `manifest.json`: HMAC-SHA256 with a shared secret, or
 * Ed25519 with a private key file, which anyone holding the public key can
 * check.
 *
 * Both sign the same bytes: the RFC 8785 canonical JSON (UTF-8) of the
 * manifest object **without** its `signature` member.
 * - `alg: "hs256"`: the value is the unpadded base64url HMAC-SHA256 of those
 *   bytes under the UTF-8 bytes of `NOEMA_SIGNING_KEY`; `kid` names the key
 *   (`NOEMA_SIGNING_KID`, default `default`).
 * - `alg: "ed25519"`: the value is the unpadded base64url Ed25519 signature
 *   (64 bytes) of those bytes under the private key of the file
 *   `NOEMA_SIGNING_KEY_FILE` names; `kid` is the key id derived from the
 *   public key (`ed25519:` + 16 hex digits, see `./ed25519_key.ts`).
 *
 * With both set, Ed25519 signs (one `signature` per manifest). A verifier
 * must hold a key of the signature's algorithm: a manifest signed with the
 * other one is a bad signature, never a warning, so replacing a signature
 * with one of the other kind cannot turn a check into "unchecked". Because
 * every file's size and `sha256:` digest is in the signed manifest, a valid
 * signature covers every artifact of the episode.
 *
 * @module
 */
import { nodeCrypto } from "../builtins.ts";
import { Buffer } from "node:buffer";
import process from "node:process";
import { canonicalJson } from "./hash.ts";
import { ed25519KeyFromEnv, type Ed25519PrivateKey, type Ed25519PublicKey } from "./ed25519_key.ts";

/** The environment variable holding the signing key. */
export const SIGNING_KEY_ENV = "NOEMA_SIGNING_KEY";
/** The environment variable naming the key (`kid`). */
export const SIGNING_KID_ENV = "NOEMA_SIGNING_KID";
/** The `kid` used when {@link SIGNING_KID_ENV} is not set. */
export const DEFAULT_KID = "default";

/** A signing key and its id. */
export interface SigningKey {
  /** Key id, recorded in the signature as `kid`. */
  kid: string;
  /** The secret bytes. */
  key: Uint8Array;
}

/** A key that signs manifests: an HMAC secret or an Ed25519 private key. */
export type ManifestSigningKey = SigningKey | Ed25519PrivateKey;
/** A key that checks manifest signatures: an HMAC secret or an Ed25519 public key. */
export type ManifestVerifyKey = SigningKey | Ed25519PublicKey;

/** Whether a key is an Ed25519 one (private or public). */
function isEd25519(key: ManifestSigningKey | ManifestVerifyKey): key is Ed25519PrivateKey | Ed25519PublicKey {
  return "publicKey" in key;
}

/** The `signature` block of a signed manifest. */
export interface ManifestSignature {
  /** `hs256` (HMAC-SHA256) or `ed25519`. */
  alg: "hs256" | "ed25519";
  /** Which key signed it. */
  kid: string;
  /** Unpadded base64url of the HMAC or of the Ed25519 signature. */
  value: string;
}

/**
 * The signing key from the environment (`NOEMA_SIGNING_KEY`, optional
 * `NOEMA_SIGNING_KID`), or `null` when no key is set (an empty value counts
 * as unset).
 *
 * @example
 * ```ts
 * import { signingKeyFromEnv } from "noema";
 * signingKeyFromEnv({ NOEMA_SIGNING_KEY: "s3cret" })?.kid; // "default"
 * ```
 */
export function signingKeyFromEnv(env: Record<string, string | undefined> = process.env): SigningKey | null {
  const secret = env[SIGNING_KEY_ENV];
  if (secret === undefined || secret === "") return null;
  const kid = env[SIGNING_KID_ENV] || DEFAULT_KID;
  return { kid, key: new TextEncoder().encode(secret) };
}

/**
 * The exact text that is signed: the canonical JSON of the manifest without
 * its `signature` member.
 *
 * @example
 * ```ts
 * import { manifestSigningInput } from "noema";
 * manifestSigningInput({ schema_version: "manifest/1.0", files: [], signature: null });
 * // '{"files":[],"schema_version":"manifest/1.0"}'
 * ```
 */
export function manifestSigningInput(manifest: Readonly<Record<string, unknown>>): string {
  const { signature: _ignored, ...rest } = manifest;
  return canonicalJson(rest);
}

function hmac(key: Uint8Array, bytes: Uint8Array): Buffer {
  return nodeCrypto().createHmac("sha256", key).update(bytes).digest();
}

/**
 * The key that signs manifests, from the environment: the Ed25519 key of
 * `NOEMA_SIGNING_KEY_FILE` when it is set (it wins over `NOEMA_SIGNING_KEY`),
 * else the HMAC key of `NOEMA_SIGNING_KEY`, else null. A bad key file
 * throws a usage error naming it.
 *
 * @example
 * ```ts
 * import { manifestKeyFromEnv } from "noema";
 * manifestKeyFromEnv({ NOEMA_SIGNING_KEY: "s3cret" })?.kid; // "default"
 * ```
 */
export function manifestKeyFromEnv(
  env: Record<string, string | undefined> = process.env,
): ManifestSigningKey | null {
  return ed25519KeyFromEnv(env) ?? signingKeyFromEnv(env);
}

/**
 * Signs a manifest: returns its `signature` block (the manifest is not changed).
 * An HMAC key gives `alg: "hs256"`, an Ed25519 private key `alg: "ed25519"`.
 *
 * @example
 * ```ts
 * import { signManifest } from "noema";
 * const key = { kid: "ci", key: new TextEncoder().encode("s3cret") };
 * const signature = signManifest({ schema_version: "manifest/1.0", episode_id: "ep_1", files: [] }, key);
 * // { alg: "hs256", kid: "ci", value: "…43 base64url chars…" }
 * ```
 */
export function signManifest(manifest: Readonly<Record<string, unknown>>, key: ManifestSigningKey): ManifestSignature {
  const input = Buffer.from(manifestSigningInput(manifest), "utf8");
  if (isEd25519(key)) {
    return {
      alg: "ed25519",
      kid: key.kid,
      value: nodeCrypto().sign(null, input, key.privateKey).toString("base64url"),
    };
  }
  return { alg: "hs256", kid: key.kid, value: hmac(key.key, input).toString("base64url") };
}

/** The result of checking a manifest's signature. */
export interface SignatureCheck {
  /**
   * `valid`: signed and the signature matches; `unsigned`: no signature
   * block; `bad_signature`: signed, but the value, the algorithm or the key
   * id does not match, or the keys given are all of the other algorithm;
   * `unchecked`: signed, but no key was given to check it with.
   */
  status: "valid" | "unsigned" | "bad_signature" | "unchecked";
  /** The `alg` of the signature, when it is a known one. */
  alg?: "hs256" | "ed25519" | null;
  /** The `kid` of the signature, when there is one. */
  kid: string | null;
  /** What is wrong, in words (null when valid or unsigned). */
  message: string | null;
}

/** How each algorithm's value is written: exactly this many unpadded base64url characters. */
const VALUE_CHARS = { hs256: 43, ed25519: 86 } as const;
/** What a value of each algorithm is, in words. */
const VALUE_WHAT = { hs256: "a 32-byte HMAC-SHA256", ed25519: "a 64-byte Ed25519 signature" } as const;
/** Where a verifier's key of each algorithm comes from, in words. */
const KEY_SOURCE = { hs256: SIGNING_KEY_ENV, ed25519: "--public-key FILE" } as const;

/** The signature block's shape: its alg, kid and value, or what is wrong with it. */
function readSignature(
  sig: unknown,
): { alg: "hs256" | "ed25519"; kid: string; value: string } | SignatureCheck {
  if (typeof sig !== "object" || sig === null || Array.isArray(sig)) {
    return { status: "bad_signature", kid: null, message: "signature: must be an object {alg, kid, value} or null" };
  }
  const s = sig as Record<string, unknown>;
  const kid = typeof s.kid === "string" ? s.kid : null;
  if (s.alg !== "hs256" && s.alg !== "ed25519") {
    return {
      status: "bad_signature",
      kid,
      message: `signature.alg: unsupported ${JSON.stringify(s.alg)} (expected "hs256" or "ed25519")`,
    };
  }
  if (kid === null) return { status: "bad_signature", kid, message: "signature.kid: must be a string" };
  if (typeof s.value !== "string") {
    return { status: "bad_signature", kid, message: "signature.value: must be a string" };
  }
  return { alg: s.alg, kid, value: s.value };
}

/** The key among `keys` that checks a signature of `alg` by `kid`, or why there is none. */
function pickKey(
  keys: readonly ManifestVerifyKey[],
  alg: "hs256" | "ed25519",
  kid: string,
): ManifestVerifyKey | SignatureCheck {
  if (keys.length === 0) {
    return {
      status: "unchecked",
      alg,
      kid,
      message: alg === "hs256"
        ? `signed with key ${JSON.stringify(kid)}, but ${SIGNING_KEY_ENV} is not set`
        : `signed with Ed25519 key ${JSON.stringify(kid)}; give its public key (--public-key FILE) to check it`,
    };
  }
  const ofAlg = keys.filter((k) => (alg === "ed25519") === isEd25519(k));
  if (ofAlg.length === 0) {
    return {
      status: "bad_signature",
      alg,
      kid,
      message: `signature.alg: signed with ${alg} (key ${JSON.stringify(kid)}), but the key given is ${
        alg === "ed25519" ? `an HMAC key (${SIGNING_KEY_ENV})` : "an Ed25519 public key"
      }: checking it needs ${KEY_SOURCE[alg]}`,
    };
  }
  const key = ofAlg.find((k) => k.kid === kid);
  if (key === undefined) {
    return {
      status: "bad_signature",
      alg,
      kid,
      message: `signature.kid: signed with key ${JSON.stringify(kid)}, the key given is ${
        ofAlg.map((k) => JSON.stringify(k.kid)).join(", ")
      }`,
    };
  }
  return key;
}

/** Whether `value` (strictly decoded) is the signature of `input` under `key`; constant-time for HMAC. */
function signatureMatches(key: ManifestVerifyKey, input: Buffer, value: string): boolean {
  const given = Buffer.from(value, "base64url");
  if (isEd25519(key)) return nodeCrypto().verify(null, input, key.publicKey, given);
  const expected = hmac(key.key, input);
  return given.length === expected.length && nodeCrypto().timingSafeEqual(given, expected);
}

/**
 * Checks a manifest's `signature` against the keys given: an HMAC key
 * (constant-time comparison) and/or Ed25519 public keys. The signature's
 * algorithm picks the key; a signature no key given can check is a bad
 * signature (with no key at all: `unchecked`).
 *
 * @example
 * ```ts
 * import { signManifest, verifyManifestSignature } from "noema";
 * const key = { kid: "default", key: new TextEncoder().encode("k") };
 * const m: Record<string, unknown> = { schema_version: "manifest/1.0", episode_id: "e", files: [] };
 * m.signature = signManifest(m, key);
 * verifyManifestSignature(m, key).status; // "valid"
 * ```
 */
export function verifyManifestSignature(
  manifest: Readonly<Record<string, unknown>>,
  key: ManifestVerifyKey | readonly ManifestVerifyKey[] | null,
): SignatureCheck {
  const sig = manifest.signature;
  if (sig === undefined || sig === null) return { status: "unsigned", kid: null, message: null };
  const read = readSignature(sig);
  if ("status" in read) return read;
  const { alg, kid, value } = read;
  const keys = key === null
    ? []
    : Array.isArray(key)
    ? key as readonly ManifestVerifyKey[]
    : [key as ManifestVerifyKey];
  const picked = pickKey(keys, alg, kid);
  if ("status" in picked) return picked;
  let input: Buffer;
  try {
    input = Buffer.from(manifestSigningInput(manifest), "utf8");
  } catch (e) {
    return {
      status: "bad_signature",
      alg,
      kid,
      message: `the manifest has no canonical JSON form: ${(e as Error).message}`,
    };
  }
  // Decode strictly: Buffer.from ignores junk after the value (and padding, and other alphabets).
  if (!new RegExp(`^[A-Za-z0-9_-]{${VALUE_CHARS[alg]}}$`).test(value)) {
    return {
      status: "bad_signature",
      alg,
      kid,
      message: `signature.value: must be exactly ${VALUE_CHARS[alg]} characters of unpadded base64url (${
        VALUE_WHAT[alg]
      })`,
    };
  }
  // Canonical only: a last character with its unused low bits set decodes to the same bytes, a second spelling.
  if (Buffer.from(value, "base64url").toString("base64url") !== value) {
    return {
      status: "bad_signature",
      alg,
      kid,
      message: "signature.value: not the canonical base64url of its bytes (the last character's unused bits are set)",
    };
  }
  if (!signatureMatches(picked, input, value)) {
    return {
      status: "bad_signature",
      alg,
      kid,
      message: alg === "hs256"
        ? "signature.value: the HMAC does not match (wrong key, or the manifest was changed)"
        : "signature.value: the Ed25519 signature does not verify with the public key (the manifest was changed, " +
          "or another key signed it)",
    };
  }
  return { status: "valid", alg, kid, message: null };
}
