/**
 * Optional HMAC-SHA256 signing of `manifest.json`.
 *
 * Scheme (`alg: "hs256"`): the signed bytes are the RFC 8785 canonical JSON
 * (UTF-8) of the manifest object **without** its `signature` member; the
 * value is the unpadded base64url HMAC-SHA256 of those bytes under the key.
 * The key is the UTF-8 bytes of `NOEMA_SIGNING_KEY`; `kid` names it
 * (`NOEMA_SIGNING_KID`, default `default`) so verifiers can tell which key
 * was used. Because every file's size and `sha256:` digest is in the signed
 * manifest, a valid signature covers every artifact of the episode.
 *
 * @module
 */
import { nodeCrypto } from "../builtins.ts";
import { Buffer } from "node:buffer";
import process from "node:process";
import { canonicalJson } from "./hash.ts";

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

/** The `signature` block of a signed manifest. */
export interface ManifestSignature {
  /** Always `hs256` (HMAC-SHA256). */
  alg: "hs256";
  /** Which key signed it. */
  kid: string;
  /** Unpadded base64url of the HMAC. */
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

function hmac(key: Uint8Array, text: string): Buffer {
  return nodeCrypto().createHmac("sha256", key).update(text, "utf8").digest();
}

/**
 * Signs a manifest: returns its `signature` block (the manifest is not changed).
 *
 * @example
 * ```ts
 * import { signManifest } from "noema";
 * const key = { kid: "ci", key: new TextEncoder().encode("s3cret") };
 * const signature = signManifest({ schema_version: "manifest/1.0", episode_id: "ep_1", files: [] }, key);
 * // { alg: "hs256", kid: "ci", value: "…43 base64url chars…" }
 * ```
 */
export function signManifest(manifest: Readonly<Record<string, unknown>>, key: SigningKey): ManifestSignature {
  return { alg: "hs256", kid: key.kid, value: hmac(key.key, manifestSigningInput(manifest)).toString("base64url") };
}

/** The result of checking a manifest's signature. */
export interface SignatureCheck {
  /**
   * `valid`: signed and the HMAC matches; `unsigned`: no signature block;
   * `bad_signature`: signed, but the value, the algorithm or the key id does
   * not match; `unchecked`: signed, but no key was given to check it with.
   */
  status: "valid" | "unsigned" | "bad_signature" | "unchecked";
  /** The `kid` of the signature, when there is one. */
  kid: string | null;
  /** What is wrong, in words (null when valid or unsigned). */
  message: string | null;
}

/**
 * Checks a manifest's `signature` against a key (constant-time comparison).
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
  key: SigningKey | null,
): SignatureCheck {
  const sig = manifest.signature;
  if (sig === undefined || sig === null) return { status: "unsigned", kid: null, message: null };
  if (typeof sig !== "object" || Array.isArray(sig)) {
    return { status: "bad_signature", kid: null, message: "signature: must be an object {alg, kid, value} or null" };
  }
  const s = sig as Record<string, unknown>;
  const kid = typeof s.kid === "string" ? s.kid : null;
  if (s.alg !== "hs256") {
    return {
      status: "bad_signature",
      kid,
      message: `signature.alg: unsupported ${JSON.stringify(s.alg)} (expected "hs256")`,
    };
  }
  if (kid === null) return { status: "bad_signature", kid, message: "signature.kid: must be a string" };
  if (typeof s.value !== "string") {
    return { status: "bad_signature", kid, message: "signature.value: must be a string" };
  }
  if (key === null) {
    return {
      status: "unchecked",
      kid,
      message: `signed with key ${JSON.stringify(kid)}, but ${SIGNING_KEY_ENV} is not set`,
    };
  }
  if (kid !== key.kid) {
    return {
      status: "bad_signature",
      kid,
      message: `signature.kid: signed with key ${JSON.stringify(kid)}, the key given is ${JSON.stringify(key.kid)}`,
    };
  }
  let input: string;
  try {
    input = manifestSigningInput(manifest);
  } catch (e) {
    return {
      status: "bad_signature",
      kid,
      message: `the manifest has no canonical JSON form: ${(e as Error).message}`,
    };
  }
  // Decode strictly: Buffer.from ignores junk after the digest (and padding, and other alphabets).
  if (!/^[A-Za-z0-9_-]{43}$/.test(s.value)) {
    return {
      status: "bad_signature",
      kid,
      message: "signature.value: must be exactly 43 characters of unpadded base64url (a 32-byte HMAC-SHA256)",
    };
  }
  const expected = hmac(key.key, input);
  const given = Buffer.from(s.value, "base64url");
  if (given.length !== expected.length || !nodeCrypto().timingSafeEqual(given, expected)) {
    return {
      status: "bad_signature",
      kid,
      message: "signature.value: the HMAC does not match (wrong key, or the manifest was changed)",
    };
  }
  return { status: "valid", kid, message: null };
}
