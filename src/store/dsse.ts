/**
 * DSSE envelopes (Dead Simple Signing Envelope, v1.0.0), signed with
 * Ed25519: the format in-toto attestations travel in, which cosign,
 * in-toto's verifiers and `openssl` can check.
 *
 * The signature is over the pre-authentication encoding (PAE) of the payload
 * type and the payload bytes, never over the JSON of the envelope:
 *
 *     "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
 *
 * where LEN is the byte length in ASCII decimal and SP one space. `payload`
 * and each `sig` are standard base64 (with padding); `keyid` is the key id of
 * `./ed25519_key.ts`.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { nodeCrypto } from "../builtins.ts";
import type { Ed25519PrivateKey, Ed25519PublicKey } from "./ed25519_key.ts";

/** One signature of an envelope. */
export interface DsseSignature {
  /** The id of the key that made it. */
  keyid: string;
  /** Standard base64 of the Ed25519 signature over the PAE. */
  sig: string;
}

/** A DSSE envelope. */
export interface DsseEnvelope {
  /** What the payload is, e.g. `application/vnd.in-toto+json`. */
  payloadType: string;
  /** Standard base64 of the payload bytes. */
  payload: string;
  /** Its signatures. */
  signatures: DsseSignature[];
}

/**
 * The DSSE pre-authentication encoding: the bytes that are signed.
 *
 * @example
 * ```ts
 * import { dssePae } from "noema";
 * dssePae("t", new TextEncoder().encode("hi")).toString(); // "DSSEv1 1 t 2 hi"
 * ```
 */
export function dssePae(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, "utf8");
  return Buffer.concat([
    Buffer.from(`DSSEv1 ${type.length} `, "ascii"),
    type,
    Buffer.from(` ${payload.length} `, "ascii"),
    payload,
  ]);
}

/**
 * Signs `payload` into a DSSE envelope with an Ed25519 key.
 *
 * @example
 * ```ts
 * import { readPrivateKeyFile, signDsse } from "noema";
 * const env = signDsse("application/json", new TextEncoder().encode("{}"), readPrivateKeyFile("noema-signing.key"));
 * ```
 */
export function signDsse(payloadType: string, payload: Uint8Array, key: Ed25519PrivateKey): DsseEnvelope {
  const sig = nodeCrypto().sign(null, dssePae(payloadType, payload), key.privateKey);
  return {
    payloadType,
    payload: Buffer.from(payload).toString("base64"),
    signatures: [{ keyid: key.kid, sig: sig.toString("base64") }],
  };
}

/** The result of {@link verifyDsse}. */
export interface DsseCheck {
  /** Whether a signature by the key verifies. */
  valid: boolean;
  /** The payload bytes (decoded), when the envelope is well-formed. */
  payload: Buffer | null;
  /** The envelope's payload type, when it is a string. */
  payloadType: string | null;
  /** What is wrong, in words (null when valid). */
  message: string | null;
}

/** Strict standard base64 (padding required): `Buffer.from` alone would skip junk. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Standard base64 in its one canonical spelling (padding, and no bits set past the data): two spellings of one
 * payload would let one envelope be told apart from its copy, and base64 decoders disagree on the loose ones.
 */
function canonicalBase64(s: string): boolean {
  return BASE64.test(s) && Buffer.from(s, "base64").toString("base64") === s;
}

/**
 * Checks a DSSE envelope with an Ed25519 public key: some signature whose
 * `keyid` is the key's id (or that has none) must verify over the PAE of the
 * payload type and payload. Never throws for a bad envelope.
 *
 * @example
 * ```ts
 * import { readFileSync } from "node:fs";
 * import { readPublicKeyFile, verifyDsse } from "noema";
 * const check = verifyDsse(JSON.parse(readFileSync("ep.intoto.json", "utf8")), readPublicKeyFile("k.pub"));
 * if (check.valid) console.log(JSON.parse(check.payload!.toString("utf8")).subject);
 * ```
 */
export function verifyDsse(envelope: unknown, key: Ed25519PublicKey): DsseCheck {
  const bad = (message: string, payload: Buffer | null = null, payloadType: string | null = null): DsseCheck => ({
    valid: false,
    payload,
    payloadType,
    message,
  });
  if (typeof envelope !== "object" || envelope === null || Array.isArray(envelope)) {
    return bad("the envelope must be a JSON object {payloadType, payload, signatures}");
  }
  const e = envelope as Record<string, unknown>;
  if (typeof e.payloadType !== "string") return bad("payloadType: must be a string");
  if (typeof e.payload !== "string" || !canonicalBase64(e.payload)) {
    return bad("payload: must be standard base64, canonically padded");
  }
  const payload = Buffer.from(e.payload, "base64");
  if (!Array.isArray(e.signatures) || e.signatures.length === 0) {
    return bad("signatures: must be a non-empty array", payload, e.payloadType);
  }
  // keyid is optional in DSSE: a signature without one is tried too.
  const mine = e.signatures.filter((s) =>
    typeof s === "object" && s !== null && (s.keyid === key.kid || s.keyid === undefined || s.keyid === "")
  );
  if (mine.length === 0) {
    return bad(`signatures: none by key ${JSON.stringify(key.kid)}`, payload, e.payloadType);
  }
  const pae = dssePae(e.payloadType, payload);
  for (const s of mine) {
    if (typeof s.sig !== "string" || !canonicalBase64(s.sig)) continue;
    const sig = Buffer.from(s.sig, "base64");
    if (sig.length === 64 && nodeCrypto().verify(null, pae, key.publicKey, sig)) {
      return { valid: true, payload, payloadType: e.payloadType, message: null };
    }
  }
  return bad(
    `signatures: the signature by ${JSON.stringify(key.kid)} does not verify (the envelope was changed)`,
    payload,
    e.payloadType,
  );
}
