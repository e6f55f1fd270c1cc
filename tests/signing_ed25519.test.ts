/**
 * Ed25519 signing (issue 36 §4): `noema keys generate`, manifests signed with
 * `NOEMA_SIGNING_KEY_FILE`, `noema verify --strict --public-key` checking
 * them with the public key alone, the key file's checks, HMAC unchanged, and
 * the key kept out of children and artifacts. Through the real CLI.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { cli, type CliResult } from "./helpers/cli.ts";
import { foundUnder } from "./helpers/files.ts";
import { decidedEpisode, keyIdOf } from "./helpers/keys.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-ed25519-");
after(() => tmp.cleanup());

/** `noema keys generate --out FILE --json`, asserted to succeed. */
function generate(file: string): { private_key: string; public_key: string; kid: string } {
  const r = cli(["keys", "generate", "--out", file, "--json"]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** The one line of a refused command, asserted to name `file`. */
function assertRefused(r: CliResult, file: string, what: RegExp): void {
  assert.equal(r.code, 2, r.stdout + r.stderr);
  const lines = r.stderr.trim().split("\n");
  assert.equal(lines.length, 1, r.stderr);
  assert.ok(lines[0].startsWith(`noema: ${file}: `), lines[0]);
  assert.match(lines[0], what);
}

describe("noema keys generate", () => {
  test("writes the pair in the current directory: private 0600 PKCS#8, public SPKI .pub, the key id", () => {
    const cwd = join(tmp.path, "default");
    mkdirSync(cwd);
    const r = cli(["keys", "generate"], { cwd });
    assert.equal(r.code, 0, r.stderr);
    const priv = join(cwd, "noema-signing.key");
    const pub = join(cwd, "noema-signing.key.pub");
    assert.equal(statSync(priv).mode & 0o777, 0o600);
    assert.equal(statSync(pub).mode & 0o777, 0o644);
    assert.match(readFileSync(priv, "utf8"), /^-----BEGIN PRIVATE KEY-----\n/);
    assert.match(readFileSync(pub, "utf8"), /^-----BEGIN PUBLIC KEY-----\n/);
    const kid = keyIdOf(pub);
    assert.match(kid, /^ed25519:[0-9a-f]{16}$/);
    assert.match(r.stdout, new RegExp(`^key id {5}: ${kid}$`, "m"));
    assert.match(r.stdout, /^private key: noema-signing\.key /m);
  });

  test("never overwrites: an existing private or public key is refused and nothing is left behind", () => {
    const file = join(tmp.path, "once.key");
    const first = generate(file);
    assert.deepEqual(first, { private_key: file, public_key: `${file}.pub`, kid: keyIdOf(`${file}.pub`) });
    const before = [readFileSync(file, "utf8"), readFileSync(`${file}.pub`, "utf8")];
    assertRefused(cli(["keys", "generate", "--out", file]), file, /already exists; noema never overwrites a key/);
    assert.deepEqual([readFileSync(file, "utf8"), readFileSync(`${file}.pub`, "utf8")], before);
    // Only the .pub exists: refused, and the private key it had just written is removed.
    const other = join(tmp.path, "half.key");
    writeFileSync(`${other}.pub`, "not mine\n");
    assertRefused(cli(["keys", "generate", "--out", other]), `${other}.pub`, /already exists/);
    assert.equal(existsSync(other), false);
    assert.equal(readFileSync(`${other}.pub`, "utf8"), "not mine\n");
    // A symlink where the private key goes is not written through.
    const link = join(tmp.path, "link.key");
    symlinkSync(join(tmp.path, "elsewhere.key"), link);
    assertRefused(cli(["keys", "generate", "--out", link]), link, /already exists/);
    assert.equal(existsSync(join(tmp.path, "elsewhere.key")), false);
  });
});

describe("manifests signed with NOEMA_SIGNING_KEY_FILE, checked with --public-key", () => {
  const root = join(tmp.path, "root");
  let a = { private_key: "", public_key: "", kid: "" };
  let b = { private_key: "", public_key: "", kid: "" };
  let env: Record<string, string> = {};
  let id = "";
  before(() => {
    a = generate(join(tmp.path, "a.key"));
    b = generate(join(tmp.path, "b.key"));
    env = { NOEMA_ROOT: root, NOEMA_SIGNING_KEY_FILE: a.private_key };
    id = decidedEpisode(env);
  });
  const manifestOf = (dir: string) => JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  const verify = (target: string, ...args: string[]) => cli(["verify", target, ...args], { env: { NOEMA_ROOT: root } });

  test("signed with alg ed25519 and the key id; verify --strict --public-key: exit 0", () => {
    const sig = manifestOf(join(root, "episodes", id)).signature;
    assert.equal(sig.alg, "ed25519");
    assert.equal(sig.kid, keyIdOf(a.public_key));
    assert.match(sig.value, /^[A-Za-z0-9_-]{86}$/);
    const r = verify(id, "--strict", "--public-key", a.public_key);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, new RegExp(`^signature: valid \\(ed25519, kid ${a.kid}\\)$`, "m"));
    const j = JSON.parse(verify(id, "--strict", "--public-key", a.public_key, "--json").stdout);
    assert.equal(j.signature.status, "valid");
    assert.equal(j.signature.alg, "ed25519");
    // No key: a warning that says how to check it; --strict without a key: a usage error.
    const plain = verify(id);
    assert.equal(plain.code, 0, plain.stdout);
    assert.match(plain.stdout, /^signature: not checked \(signed with Ed25519 key .*--public-key FILE\)$/m);
    assert.equal(verify(id, "--strict").code, 2);
  });

  test("a byte changed in any artifact file fails verify --public-key (exit 2, naming the file)", () => {
    const dir = join(root, "episodes", id);
    const names: string[] = manifestOf(dir).files.map((f: { name: string }) => f.name);
    assert.ok(names.some((n) => n.startsWith("approvals/")) && names.some((n) => n.startsWith("checkpoints/")));
    for (const [i, name] of names.entries()) {
      const copy = join(tmp.path, "tampered", String(i), id);
      cpSync(dir, copy, { recursive: true });
      const bytes = readFileSync(join(copy, name));
      bytes[Math.floor(bytes.length / 2)] ^= 1; // same size, one bit
      writeFileSync(join(copy, name), bytes);
      const r = verify(copy, "--strict", "--public-key", a.public_key, "--json");
      assert.equal(r.code, 2, `${name}: ${r.stdout}`);
      const report = JSON.parse(r.stdout);
      assert.deepEqual(report.issues.map((x: { kind: string; file: string }) => [x.kind, x.file]), [[
        "hash_mismatch",
        name,
      ]]);
      assert.equal(report.signature.status, "valid", "the manifest itself is untouched");
    }
  });

  test("a changed manifest fails the signature (exit 4): an edited field, digests rewritten to hide a change", () => {
    const dir = join(root, "episodes", id);
    const edited = join(tmp.path, "edited", id);
    cpSync(dir, edited, { recursive: true });
    const m = manifestOf(edited);
    m.created_at = "2020-01-01T00:00:00.000Z";
    writeFileSync(join(edited, "manifest.json"), JSON.stringify(m, null, 2));
    const r = verify(edited, "--strict", "--public-key", a.public_key);
    assert.equal(r.code, 4, r.stdout);
    assert.match(r.stdout, /the Ed25519 signature does not verify with the public key/);
    // A file changed and its digest rewritten in the manifest: every hash matches, the signature does not.
    const hidden = join(tmp.path, "hidden", id);
    cpSync(dir, hidden, { recursive: true });
    writeFileSync(join(hidden, "learn.jsonl"), "");
    const m2 = manifestOf(hidden);
    const entry = m2.files.find((f: { name: string }) => f.name === "learn.jsonl");
    entry.size_bytes = 0;
    entry.sha256 = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    writeFileSync(join(hidden, "manifest.json"), JSON.stringify(m2, null, 2));
    const r2 = verify(hidden, "--strict", "--public-key", a.public_key, "--json");
    assert.equal(r2.code, 4, r2.stdout);
    assert.deepEqual(JSON.parse(r2.stdout).issues.map((x: { kind: string }) => x.kind), ["bad_signature"]);
  });

  test("the wrong public key, a stripped signature, or one of the other algorithm: exit 4", () => {
    const wrong = verify(id, "--strict", "--public-key", b.public_key);
    assert.equal(wrong.code, 4, wrong.stdout);
    assert.match(wrong.stdout, new RegExp(`signed with key "${a.kid}", the key given is "${b.kid}"`));
    // The right kid claimed by another key's signature: the value does not verify.
    const dir = join(root, "episodes", id);
    const forged = join(tmp.path, "forged", id);
    cpSync(dir, forged, { recursive: true });
    const m = manifestOf(forged);
    m.signature = null;
    writeFileSync(join(forged, "manifest.json"), JSON.stringify(m, null, 2));
    const stripped = verify(forged, "--public-key", a.public_key);
    assert.equal(stripped.code, 4, stripped.stdout);
    assert.match(stripped.stdout, /not signed, but a public key is given/);
    // Re-signed with HMAC by someone holding a shared secret: the public key's holder refuses it.
    const hmacEnv = { NOEMA_ROOT: root, NOEMA_SIGNING_KEY: "shared secret 0123456789" };
    const hmacRun = cli(["run", "Say hello", "-q"], { env: hmacEnv });
    assert.equal(hmacRun.code, 0, hmacRun.stderr);
    const other = verify(hmacRun.stdout.trim(), "--public-key", a.public_key);
    assert.equal(other.code, 4, other.stdout);
    assert.match(other.stdout, /signed with hs256 .* but the key given is an Ed25519 public key/);
    // And an Ed25519 manifest checked with only the HMAC key: refused, not "unchecked".
    const hmacOnly = cli(["verify", id], { env: hmacEnv });
    assert.equal(hmacOnly.code, 4, hmacOnly.stdout);
    assert.match(hmacOnly.stdout, /signed with ed25519 .* but the key given is an HMAC key/);
  });

  test("HMAC keeps working; with both keys set, Ed25519 signs and both checks apply", () => {
    const hmacEnv = { NOEMA_ROOT: root, NOEMA_SIGNING_KEY: "shared secret 0123456789", NOEMA_SIGNING_KID: "ci" };
    const hmacId = cli(["run", "Say hello", "-q"], { env: hmacEnv }).stdout.trim();
    const sig = manifestOf(join(root, "episodes", hmacId)).signature;
    assert.deepEqual([sig.alg, sig.kid], ["hs256", "ci"]);
    const ok = cli(["verify", hmacId, "--strict"], { env: hmacEnv });
    assert.equal(ok.code, 0, ok.stdout);
    assert.match(ok.stdout, /^signature: valid \(hs256, kid ci\)$/m);
    const both = cli(["run", "Say hello", "-q"], { env: { ...hmacEnv, NOEMA_SIGNING_KEY_FILE: a.private_key } });
    assert.equal(both.code, 0, both.stderr);
    const bothId = both.stdout.trim();
    assert.equal(manifestOf(join(root, "episodes", bothId)).signature.alg, "ed25519");
    const r = cli(["verify", bothId, "--strict", "--public-key", a.public_key], { env: hmacEnv });
    assert.equal(r.code, 0, r.stdout);
  });

  test("a key file that is a symlink, open to others, or not an Ed25519 private key is refused, nothing written", () => {
    const bad = join(tmp.path, "bad");
    mkdirSync(bad);
    cpSync(a.private_key, join(bad, "ok.key"));
    chmodSync(join(bad, "ok.key"), 0o600);
    symlinkSync(join(bad, "ok.key"), join(bad, "link.key"));
    cpSync(a.private_key, join(bad, "open.key"));
    chmodSync(join(bad, "open.key"), 0o644);
    cpSync(a.private_key, join(bad, "group.key"));
    chmodSync(join(bad, "group.key"), 0o640);
    const ec = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey;
    writeFileSync(join(bad, "ec.key"), ec.export({ type: "pkcs8", format: "pem" }) as string, { mode: 0o600 });
    writeFileSync(join(bad, "junk.key"), "not a key\n", { mode: 0o600 });
    const cases: [string, RegExp][] = [
      ["link.key", /is a symbolic link/],
      ["open.key", /mode 0644 lets others read or change the private key; run chmod 600/],
      ["group.key", /mode 0640/],
      ["ec.key", /a ec key, not an Ed25519 private key/],
      ["junk.key", /not a PEM private key/],
      ["missing.key", /no such key file/],
    ];
    for (const [name, what] of cases) {
      const file = join(bad, name);
      const r = cli(["run", "Say hello", "-q"], {
        env: { NOEMA_ROOT: join(bad, `root-${name}`), NOEMA_SIGNING_KEY_FILE: file },
      });
      assertRefused(r, file, what);
      assert.match(r.stderr, /\(NOEMA_SIGNING_KEY_FILE\)$/m);
      assert.equal(existsSync(join(bad, `root-${name}`)), false, `${name}: nothing is written`);
    }
    // verify --public-key given the private key: refused (a verifier holds no secret).
    assertRefused(verify(id, "--public-key", a.private_key), a.private_key, /is a private key; give the public key/);
  });

  test("the key file never reaches a child's environment, and the key never reaches an episode file", () => {
    const r = cli(["run", "print env", "--json", "--using", "command", "--", "sh", "-c", "env"], { env });
    assert.equal(r.code, 0, r.stderr);
    const dir = JSON.parse(r.stdout).episode_dir as string;
    const events = readFileSync(join(dir, "events.jsonl"), "utf8");
    assert.match(events, /PATH=/, "the child's env was recorded");
    assert.doesNotMatch(events, /NOEMA_SIGNING_KEY_FILE/);
    assert.equal(events.includes(a.private_key), false, "the key file's path reached the child");
    const body = readFileSync(a.private_key, "utf8").split("\n").filter((l) => l && !l.startsWith("-----"));
    assert.deepEqual(foundUnder(root, body), []);
    assert.ok(readdirSync(join(root, "episodes")).length > 1);
  });
});
