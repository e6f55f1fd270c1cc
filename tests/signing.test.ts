/**
 * Manifest signing (HMAC-SHA256) and `noema verify`: re-hashing, tampering,
 * missing files, signatures and exit codes, through the real CLI.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateKeyPairSync } from "node:crypto";
import { canonicalJson } from "noema";
import {
  manifestSigningInput,
  signingKeyFromEnv,
  signManifest,
  verifyManifestSignature,
} from "../src/store/signing.ts";
import { verifyArtifacts } from "../src/store/integrity.ts";
import { cli, REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const KEY = "correct horse battery staple";
const enc = (s: string) => new TextEncoder().encode(s);

describe("signing primitives", () => {
  test("the signed text is the canonical JSON without the signature; key order does not matter", () => {
    const a = {
      schema_version: "manifest/1.0",
      files: [],
      episode_id: "e",
      signature: { alg: "hs256", kid: "k", value: "x" },
    };
    const b = { episode_id: "e", files: [], schema_version: "manifest/1.0", signature: null };
    assert.equal(manifestSigningInput(a), '{"episode_id":"e","files":[],"schema_version":"manifest/1.0"}');
    assert.equal(manifestSigningInput(a), manifestSigningInput(b));
    assert.equal(
      manifestSigningInput(b),
      canonicalJson({ episode_id: "e", files: [], schema_version: "manifest/1.0" }),
    );
  });

  test("sign then verify; a changed field, another key or another kid fail", () => {
    const key = { kid: "ci", key: enc(KEY) };
    const m: Record<string, unknown> = { schema_version: "manifest/1.0", episode_id: "ep_1", files: [] };
    m.signature = signManifest(m, key);
    const sig = m.signature as { alg: string; kid: string; value: string };
    assert.equal(sig.alg, "hs256");
    assert.equal(sig.kid, "ci");
    assert.match(sig.value, /^[A-Za-z0-9_-]{43}$/); // 32 bytes, unpadded base64url
    assert.equal(verifyManifestSignature(m, key).status, "valid");
    assert.equal(verifyManifestSignature({ ...m, episode_id: "ep_2" }, key).status, "bad_signature");
    assert.equal(verifyManifestSignature(m, { kid: "ci", key: enc("other") }).status, "bad_signature");
    assert.match(verifyManifestSignature(m, { kid: "prod", key: enc(KEY) }).message ?? "", /signed with key "ci"/);
    assert.equal(verifyManifestSignature(m, null).status, "unchecked");
    assert.equal(verifyManifestSignature({ ...m, signature: null }, key).status, "unsigned");
    assert.equal(verifyManifestSignature({ ...m, signature: { ...sig, alg: "none" } }, key).status, "bad_signature");
  });

  test("a signature value is accepted only in canonical base64url (the last character's unused bits zero)", () => {
    const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const flipLastBit = (v: string) => v.slice(0, -1) + B64[B64.indexOf(v.at(-1)!) ^ 1];
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const ed = { alg: "ed25519" as const, kid: "ed25519:test", privateKey, publicKey };
    const keys = [[{ kid: "ci", key: enc(KEY) }, { kid: "ci", key: enc(KEY) }], [ed, {
      alg: "ed25519" as const,
      kid: ed.kid,
      publicKey,
    }]] as const;
    for (const [signer, checker] of keys) {
      const m: Record<string, unknown> = { schema_version: "manifest/1.0", episode_id: "ep_1", files: [] };
      m.signature = signManifest(m, signer);
      const sig = m.signature as { alg: string; value: string };
      assert.equal(verifyManifestSignature(m, checker).status, "valid");
      const altered = { ...m, signature: { ...sig, value: flipLastBit(sig.value) } };
      const check = verifyManifestSignature(altered, checker);
      assert.equal(check.status, "bad_signature", `${sig.alg}: the same bytes, another spelling`);
      assert.match(check.message ?? "", /canonical/);
    }
  });

  test("the key comes from NOEMA_SIGNING_KEY, the kid from NOEMA_SIGNING_KID (default 'default')", () => {
    assert.equal(signingKeyFromEnv({}), null);
    assert.equal(signingKeyFromEnv({ NOEMA_SIGNING_KEY: "" }), null);
    assert.equal(signingKeyFromEnv({ NOEMA_SIGNING_KEY: "k" })?.kid, "default");
    assert.equal(signingKeyFromEnv({ NOEMA_SIGNING_KEY: "k", NOEMA_SIGNING_KID: "ci-2026" })?.kid, "ci-2026");
  });

  test("the manifest JSON Schema documents the scheme", () => {
    const schema = readFileSync(join(REPO, "schemas", "manifest.schema.json"), "utf8");
    assert.match(schema, /HMAC-SHA256/);
    assert.match(schema, /RFC 8785/);
  });
});

describe("noema verify", () => {
  const tmp = tempDir("noema-signing-");
  const root = join(tmp.path, "root");
  const signedEnv = { NOEMA_ROOT: root, NOEMA_SIGNING_KEY: KEY, NOEMA_SIGNING_KID: "test-key" };
  const fresh = (env: Record<string, string>): string => {
    const r = cli(["run", "Say hello", "-q"], { env });
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim();
  };
  let signed = "";
  before(() => {
    signed = fresh(signedEnv);
  });
  after(() => tmp.cleanup());

  test("a signed run verifies: exit 0, reference-style report, signature valid", () => {
    const manifest = JSON.parse(readFileSync(join(root, "episodes", signed, "manifest.json"), "utf8"));
    assert.equal(manifest.signature.alg, "hs256");
    assert.equal(manifest.signature.kid, "test-key");
    const r = cli(["verify", signed], { env: signedEnv });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^Artifact verification\n/);
    assert.match(r.stdout, /^status {3}: ok$/m);
    assert.match(r.stdout, /^files {4}: 4$/m);
    assert.match(r.stdout, /^signature: valid \(hs256, kid test-key\)$/m);
    assert.match(r.stdout, /^issues {3}: none$/m);
    assert.match(r.stdout, /^- events\.jsonl: ok$/m);
    const j = JSON.parse(cli(["verify", signed, "--json", "--strict"], { env: signedEnv }).stdout);
    assert.equal(j.status, "ok");
    assert.equal(j.exit_code, 0);
    assert.equal(j.signature.status, "valid");
    assert.deepEqual(j.files.map((f: { name: string }) => f.name), [
      "events.jsonl",
      "learn.jsonl",
      "state.json",
      "summary.json",
    ]);
    // The manifest path works as the target too.
    assert.equal(cli(["verify", join(root, "episodes", signed, "manifest.json")], { env: signedEnv }).code, 0);
  });

  test("one byte changed in events.jsonl: hash_mismatch, exit 2", () => {
    const id = fresh(signedEnv);
    const path = join(root, "episodes", id, "events.jsonl");
    const bytes = readFileSync(path);
    const at = bytes.indexOf("Say hello");
    bytes[at] = "s".charCodeAt(0); // same size, different content
    writeFileSync(path, bytes);
    const r = cli(["verify", id], { env: signedEnv });
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stdout, /^status {3}: tampered$/m);
    assert.match(r.stdout, /^- events\.jsonl: hash_mismatch \(sha256 differs from manifest\)$/m);
    const j = JSON.parse(cli(["verify", id, "--json"], { env: signedEnv }).stdout);
    assert.deepEqual(j.issues.map((i: { kind: string; file: string }) => [i.kind, i.file]), [[
      "hash_mismatch",
      "events.jsonl",
    ]]);
  });

  test("a file added after the manifest: unlisted, exit 2", () => {
    const id = fresh(signedEnv);
    writeFileSync(join(root, "episodes", id, "notes.txt"), "added later\n");
    const r = cli(["verify", id], { env: signedEnv });
    assert.equal(r.code, 2);
    assert.match(r.stdout, /^- notes\.txt: unlisted/m);
  });

  test("the wrong key: bad_signature, exit 4", () => {
    const r = cli(["verify", signed], { env: { ...signedEnv, NOEMA_SIGNING_KEY: "not the key" } });
    assert.equal(r.code, 4, r.stdout + r.stderr);
    assert.match(r.stdout, /^status {3}: bad_signature$/m);
    assert.match(r.stdout, /bad_signature: signature\.value: the HMAC does not match/);
    // An edited manifest (hashes rewritten to hide tampering) fails the signature too.
    const id = fresh(signedEnv);
    const mpath = join(root, "episodes", id, "manifest.json");
    const m = JSON.parse(readFileSync(mpath, "utf8"));
    m.created_at = "2020-01-01T00:00:00.000Z";
    writeFileSync(mpath, JSON.stringify(m));
    assert.equal(cli(["verify", id], { env: signedEnv }).code, 4);
  });

  test("a deleted file: missing, exit 3; no manifest: exit 3", () => {
    const id = fresh(signedEnv);
    rmSync(join(root, "episodes", id, "state.json"));
    const r = cli(["verify", id], { env: signedEnv });
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stdout, /^status {3}: missing$/m);
    assert.match(r.stdout, /^- state\.json: missing/m);
    rmSync(join(root, "episodes", id, "manifest.json"));
    const r2 = cli(["verify", id, "--json"], { env: signedEnv });
    assert.equal(r2.code, 3);
    assert.equal(JSON.parse(r2.stdout).issues[0].kind, "missing_manifest");
  });

  test("unsigned: a warning without a key, exit 0; with a key set, a signature error, exit 4", () => {
    const id = fresh({ NOEMA_ROOT: root });
    const manifest = JSON.parse(readFileSync(join(root, "episodes", id, "manifest.json"), "utf8"));
    assert.equal(manifest.signature, null);
    const r = cli(["verify", id], { env: { NOEMA_ROOT: root } });
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^signature: unsigned$/m);
    assert.match(r.stdout, /unsigned \(warning\)/);
    assert.equal(cli(["verify", id, "--strict"], { env: signedEnv }).code, 4);
    // With NOEMA_SIGNING_KEY set, an unsigned manifest fails without --strict (issue 12 §6).
    const keyed = cli(["verify", id], { env: signedEnv });
    assert.equal(keyed.code, 4, keyed.stdout);
    assert.match(keyed.stdout, /not signed, but NOEMA_SIGNING_KEY is set/);
    // Signed, but no key to check with: exit 0 with a warning.
    assert.equal(cli(["verify", signed], { env: { NOEMA_ROOT: root } }).code, 0);
  });

  test("--strict without a key is a usage error saying the key is needed (issue 24.16), with it checks", () => {
    // Without the key, an untouched signed episode and an unsigned one cannot be told from tampered: refuse.
    for (const target of [signed, fresh({ NOEMA_ROOT: root })]) {
      const r = cli(["verify", target, "--strict"], { env: { NOEMA_ROOT: root } });
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stdout, "");
      assert.match(r.stderr, /^noema: --strict needs the signing key to check signatures: set NOEMA_SIGNING_KEY/);
    }
    // With the key, --strict verifies: the untouched signed episode is ok.
    const ok = cli(["verify", signed, "--strict"], { env: signedEnv });
    assert.equal(ok.code, 0, ok.stdout);
    assert.match(ok.stdout, /^signature: valid/m);
  });

  test("the library function reports the same", () => {
    const r = verifyArtifacts(signed, { root, key: { kid: "test-key", key: enc(KEY) }, strict: true });
    assert.equal(r.exit_code, 0);
    assert.equal(r.files.every((f) => f.status === "ok"), true);
    assert.equal(verifyArtifacts(signed, { root, key: null, strict: false }).signature.status, "unchecked");
  });

  test("an unknown episode is a one-line error", () => {
    const r = cli(["verify", "ep_NOPE"], { env: signedEnv });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^noema: episode ep_NOPE not found/);
  });
});
