/**
 * `noema attest` (issue 36 §5): a DSSE envelope over an in-toto Statement v1
 * of a finished episode, signed with Ed25519. The envelope made by the
 * compiled binary is checked with the `openssl` CLI over the DSSE
 * pre-authentication encoding, not with noema's code; the statement's
 * subjects are checked against digests computed here; a tampered episode is
 * not attested and leaves no file.
 *
 * The binary part is skipped, with a message, only when `bun build
 * --compile` or an `openssl` that verifies Ed25519 with `-rawin` is missing.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { readPublicKeyFile, verifyAttestation } from "noema";
import { build, bunExecutable } from "../scripts/build.ts";
import { BINARY, cli, REPO } from "./helpers/cli.ts";
import { decidedEpisode, keyIdOf, sha256Hex } from "./helpers/keys.ts";
import { tempDir } from "./helpers/tmp.ts";
import { osUserName } from "../src/runtime/os_user.ts";

const tmp = tempDir("noema-attest-");
after(() => tmp.cleanup());
const root = join(tmp.path, "root");

interface Envelope {
  payloadType: string;
  payload: string;
  signatures: { keyid: string; sig: string }[];
}

/** `noema keys generate --out FILE --json`. */
function generate(file: string): { private_key: string; public_key: string; kid: string } {
  const r = cli(["keys", "generate", "--out", file, "--json"]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** The DSSE pre-authentication encoding, written out here from the DSSE spec (not noema's code). */
function pae(type: string, body: Buffer): Buffer {
  const t = Buffer.from(type, "utf8");
  return Buffer.concat([Buffer.from(`DSSEv1 ${t.length} `), t, Buffer.from(` ${body.length} `), body]);
}

/** Runs `openssl pkeyutl -verify` of a raw Ed25519 signature over `data`; its exit code and output. */
function opensslVerify(
  publicKey: string,
  data: Buffer,
  sig: Buffer,
  dir: string,
): { code: number | null; out: string } {
  writeFileSync(join(dir, "pae.bin"), data);
  writeFileSync(join(dir, "sig.bin"), sig);
  const r = spawnSync("openssl", [
    "pkeyutl",
    "-verify",
    "-pubin",
    "-inkey",
    publicKey,
    "-rawin",
    "-in",
    join(dir, "pae.bin"),
    "-sigfile",
    join(dir, "sig.bin"),
  ], { encoding: "utf8" });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

/**
 * Seals `dir` again, unsigned, over the files there now (`added` listed as an approval): only the attestation's and
 * validation's own checks stand in the way of what was changed.
 */
function resealed(dir: string, added?: string): void {
  const m = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  m.signature = null;
  m.files = m.files.filter((f: { name: string }) => f.name !== added && existsSync(join(dir, f.name)));
  if (added) m.files.push({ name: added, kind: "approval", size_bytes: 0, sha256: "" });
  m.files.sort((a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const f of m.files) {
    f.size_bytes = readFileSync(join(dir, f.name)).length;
    f.sha256 = `sha256:${sha256Hex(join(dir, f.name))}`;
  }
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(m, null, 2));
}

/** The approval record of an episode that has one decision. */
function onlyApproval(dir: string): Record<string, unknown> & { consumed_at: string | null } {
  return JSON.parse(readFileSync(join(dir, "approvals", readdirSync(join(dir, "approvals"))[0]), "utf8"));
}

describe("noema attest", () => {
  let key = { private_key: "", public_key: "", kid: "" };
  /** Another key pair, that signed nothing here. */
  let other = { private_key: "", public_key: "", kid: "" };
  let id = "";
  before(() => {
    key = generate(join(tmp.path, "ci.key"));
    other = generate(join(tmp.path, "other.key"));
    id = decidedEpisode({ NOEMA_ROOT: root, NOEMA_SIGNING_KEY_FILE: key.private_key }, "carol");
  });

  test("the envelope: in-toto statement, every artifact file with its sha256, the predicate, the signature", () => {
    const r = cli(["attest", id, "--key", key.private_key], { env: { NOEMA_ROOT: root } });
    assert.equal(r.code, 0, r.stderr);
    const env: Envelope = JSON.parse(r.stdout);
    assert.equal(env.payloadType, "application/vnd.in-toto+json");
    assert.deepEqual(env.signatures.map((s) => s.keyid), [keyIdOf(key.public_key)]);
    const statement = JSON.parse(Buffer.from(env.payload, "base64").toString("utf8"));
    assert.equal(statement._type, "https://in-toto.io/Statement/v1");
    assert.equal(statement.predicateType, "https://noema.dev/attestation/episode/v1");
    // Every file of the episode, the manifest included, with the digest of its bytes.
    const dir = join(root, "episodes", id);
    const onDisk = (sub: string): string[] =>
      readdirSync(join(dir, sub), { withFileTypes: true }).flatMap((d) =>
        d.isDirectory() ? onDisk(join(sub, d.name)) : [join(sub, d.name)]
      );
    const expected = onDisk("").map((name) => ({ name, digest: { sha256: sha256Hex(join(dir, name)) } }));
    const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : 1);
    assert.deepEqual([...statement.subject].sort(byName), expected.sort(byName));
    assert.ok(
      expected.some((s) => s.name === "manifest.json") && expected.some((s) => s.name.startsWith("approvals/")),
    );
    const p = statement.predicate;
    assert.equal(p.episode_id, id);
    assert.equal(p.task, "Clean up the staging database");
    assert.equal(typeof p.outcome, "string");
    const sqlGuard = p.policies.find((x: { id: string }) => x.id === "SqlGuard@1.0");
    assert.equal(sqlGuard.sha256, `sha256:${sha256Hex(sqlGuard.path)}`);
    assert.equal(p.verdicts.vetoed, 1);
    assert.deepEqual(p.manifest_signature, { alg: "ed25519", kid: key.kid });
    const approval = onlyApproval(dir);
    assert.deepEqual(p.decisions, [{
      checkpoint_id: approval.checkpoint_id,
      decision: "approved",
      by: osUserName(), // the authenticated decider (no store: the OS user); --by is only claimed
      authenticated_as: "os_user",
      database_role: null,
      claimed_by: "carol",
      at: approval.at,
      state_hash: approval.state_hash,
      consumed_at: approval.consumed_at, // applied by the resume
      consumed_by: approval.consumed_by,
    }]);
    assert.match(p.decisions[0].consumed_at, /^\d{4}-\d\d-\d\dT/);
    assert.match(p.decisions[0].consumed_by, /^ev_/);
  });

  test("a decision the run never applied (it ended with resume --abort) is attested as not consumed", () => {
    const env = { NOEMA_ROOT: root, NOEMA_SIGNING_KEY_FILE: key.private_key };
    const run = cli(["run", join(REPO, "examples", "sql-vetoed.jsonc"), "--pause-on-veto", "-q"], { env });
    assert.equal(run.code, 4, run.stderr);
    const aborted = run.stdout.trim();
    assert.equal(cli(["approve", aborted, "--by", "erin"], { env }).code, 0);
    const ended = cli(["resume", aborted, "--abort"], { env });
    assert.notEqual(ended.code, 2, ended.stderr);
    const r = cli(["attest", aborted, "--key", key.private_key], { env: { NOEMA_ROOT: root } });
    assert.equal(r.code, 0, r.stderr);
    const p = JSON.parse(Buffer.from(JSON.parse(r.stdout).payload, "base64").toString("utf8")).predicate;
    const approval = onlyApproval(join(root, "episodes", aborted));
    assert.equal(approval.consumed_at, null, "the record says it was never used");
    assert.deepEqual(
      p.decisions.map((d: Record<string, unknown>) => [d.decision, d.claimed_by, d.consumed_at, d.consumed_by]),
      [["approved", "erin", null, null]],
    );
  });

  test("--out writes it atomically; attest --verify and verifyAttestation check it with the public key", () => {
    const out = join(tmp.path, "ep.intoto.json");
    const r = cli(["attest", id, "--out", out, "--json"], {
      env: { NOEMA_ROOT: root, NOEMA_SIGNING_KEY_FILE: key.private_key },
    });
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout);
    assert.equal(j.file, out);
    assert.equal(j.keyid, key.kid);
    assert.deepEqual(readdirSync(tmp.path).filter((n) => n.includes(".tmp-")), []);
    const ok = cli(["attest", "--verify", out, "--public-key", key.public_key]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, new RegExp(`valid \\(ed25519, kid ${key.kid}\\), episode ${id}`));
    const envelope = JSON.parse(readFileSync(out, "utf8"));
    assert.equal(verifyAttestation(envelope, readPublicKeyFile(key.public_key)).valid, true);
    // DSSE's keyid is optional: a signature without one is checked too.
    const anonymous = { ...envelope, signatures: [{ sig: envelope.signatures[0].sig }] };
    assert.equal(verifyAttestation(anonymous, readPublicKeyFile(key.public_key)).valid, true);
    // With the episode: its files are the ones attested; a copy with one byte changed, and an extra file, are not.
    const same = cli(["attest", "--verify", out, "--public-key", key.public_key, id], { env: { NOEMA_ROOT: root } });
    assert.equal(same.code, 0, same.stdout + same.stderr);
    assert.match(same.stdout, /every file matches the attestation/);
    const copy = join(tmp.path, "changed-copy", id);
    cpSync(join(root, "episodes", id), copy, { recursive: true });
    const events = readFileSync(join(copy, "events.jsonl"));
    events[5] ^= 1;
    writeFileSync(join(copy, "events.jsonl"), events);
    writeFileSync(join(copy, "extra.txt"), "added\n");
    writeFileSync(join(copy, "lock.data"), "a file named like the lock is a file like the rest\n");
    // Found by an audit: the lock's names were left aside whatever they held.
    writeFileSync(join(copy, "lock.tmp-evil"), JSON.stringify({ decision: "approved", by: "mallory" }));
    const differs = cli(["attest", "--verify", out, "--public-key", key.public_key, copy, "--json"]);
    assert.equal(differs.code, 2, differs.stdout + differs.stderr);
    assert.deepEqual(JSON.parse(differs.stdout).differences, [
      "events.jsonl: sha256 differs from the attestation",
      "extra.txt: not in the attestation",
      "lock.data: not in the attestation",
      "lock.tmp-evil: not in the attestation",
    ]);
    // A payload changed after signing, or another key: exit 4.
    const statement = JSON.parse(Buffer.from(envelope.payload, "base64").toString("utf8"));
    statement.predicate.decisions[0].by = "cto";
    const forged = join(tmp.path, "forged.json");
    writeFileSync(
      forged,
      JSON.stringify({ ...envelope, payload: Buffer.from(JSON.stringify(statement)).toString("base64") }),
    );
    const bad = cli(["attest", "--verify", forged, "--public-key", key.public_key]);
    assert.equal(bad.code, 4, bad.stdout);
    assert.match(bad.stdout, /does not verify/);
    const wrong = cli(["attest", "--verify", out, "--public-key", other.public_key]);
    assert.equal(wrong.code, 4, wrong.stdout);
    assert.match(wrong.stdout, new RegExp(`none by key "${other.kid}"`));
  });

  test("attest --verify refuses (4) a payload in a loose base64 spelling, and an envelope with a key given twice", () => {
    // Found by an audit: both verified; a reader keeping the first of two keys saw another episode's statement.
    const out = join(tmp.path, "loose.intoto.json");
    const r = cli(["attest", id, "--out", out], { env: { NOEMA_ROOT: root, NOEMA_SIGNING_KEY_FILE: key.private_key } });
    assert.equal(r.code, 0, r.stderr);
    const envelope = JSON.parse(readFileSync(out, "utf8"));
    const check = (name: string, text: string, message: RegExp) => {
      writeFileSync(join(tmp.path, name), text);
      const v = cli(["attest", "--verify", join(tmp.path, name), "--public-key", key.public_key]);
      assert.equal(v.code, 4, `${name}: ${v.stdout}${v.stderr}`);
      assert.match(v.stdout, message, name);
    };
    // Bytes spelt with bits set past the data in the last base64 character (decoders drop them): the payload made
    // one byte past a multiple of 3 long, so that its spelling has spare bits (the check comes before the signature's).
    const bytes = Buffer.from(envelope.payload, "base64");
    const long = Buffer.concat([bytes, Buffer.from(" ".repeat((4 - (bytes.length % 3)) % 3))]);
    assert.equal(long.length % 3, 1);
    const payload = long.toString("base64");
    const at = payload.length - 3; // the last data character: "xY==" holds 4 spare bits in Y
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const loose = payload.slice(0, at) + alphabet[alphabet.indexOf(payload[at]) | 1] + payload.slice(at + 1);
    assert.notEqual(loose, payload);
    assert.deepEqual(Buffer.from(loose, "base64"), long, "the same bytes");
    check("loose.json", JSON.stringify({ ...envelope, payload: loose }), /BAD \(payload: must be standard base64/);
    const text = JSON.stringify(envelope);
    check("twice.json", `{"payload":"e30=",${text.slice(1)}`, /BAD \(line 1: payload: duplicate key/);
  });

  test("a tampered or incomplete episode is not attested, and no file is written", () => {
    const dir = join(root, "episodes", id);
    const copy = join(tmp.path, "tampered", id);
    cpSync(dir, copy, { recursive: true });
    const bytes = readFileSync(join(copy, "summary.json"));
    bytes[10] ^= 1;
    writeFileSync(join(copy, "summary.json"), bytes);
    const out = join(tmp.path, "tampered.intoto.json");
    const r = cli(["attest", copy, "--key", key.private_key, "--out", out]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`^noema: cannot attest ${id}: summary\\.json: sha256 differs from manifest`));
    assert.equal(existsSync(out), false);
    rmSync(join(copy, "learn.jsonl"));
    const missing = cli(["attest", copy, "--key", key.private_key, "--out", out]);
    assert.equal(missing.code, 3, missing.stderr);
    assert.equal(existsSync(out), false);
  });

  test("a manifest signature is vouched for only when the attesting key verifies it; a failing one is refused (4)", () => {
    const copy = (name: string): string => {
      const to = join(tmp.path, name, id);
      cpSync(join(root, "episodes", id), to, { recursive: true });
      return to;
    };
    /** Recomputes the manifest's file digests, leaving its signature block as it was. */
    const rehash = (dir: string, signature?: unknown): void => {
      const m = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
      for (const f of m.files) {
        f.size_bytes = readFileSync(join(dir, f.name)).length;
        f.sha256 = `sha256:${sha256Hex(join(dir, f.name))}`;
      }
      if (signature !== undefined) m.signature = signature;
      writeFileSync(join(dir, "manifest.json"), JSON.stringify(m, null, 2));
    };
    const predicate = (r: { stdout: string }) =>
      JSON.parse(Buffer.from(JSON.parse(r.stdout).payload, "base64").toString("utf8")).predicate;
    // An approval's decider edited, the manifest rehashed: its signature by this key no longer verifies.
    const edited = copy("edited");
    const approvals = join(edited, "approvals");
    const file = join(approvals, readdirSync(approvals)[0]);
    writeFileSync(file, readFileSync(file, "utf8").replace(/"by": "[^"]*"/, '"by": "ceo"'));
    rehash(edited);
    const out = join(tmp.path, "edited.intoto.json");
    const refused = cli(["attest", edited, "--key", key.private_key, "--out", out]);
    assert.equal(refused.code, 4, refused.stderr);
    assert.match(
      refused.stderr,
      /cannot attest .*manifest\.json: signature\.value: the Ed25519 signature does not verify/,
    );
    assert.equal(existsSync(out), false);
    // Another key attests: the manifest's signature is not its to vouch for (null), untouched or planted.
    const byOther = cli(["attest", copy("intact"), "--key", other.private_key]);
    assert.equal(byOther.code, 0, byOther.stderr);
    assert.equal(predicate(byOther).manifest_signature, null);
    const planted = copy("planted");
    rehash(planted, { alg: "ed25519", kid: "ed25519:0123456789abcdef", value: "A".repeat(86) });
    const byOwn = cli(["attest", planted, "--key", key.private_key]);
    assert.equal(byOwn.code, 0, byOwn.stderr);
    assert.equal(predicate(byOwn).manifest_signature, null);
  });

  test("a decision planted for a checkpoint that never existed, naming another, misspelt, unbound or rewritten: not attested (2)", () => {
    const src = join(root, "episodes", id);
    const approval = readdirSync(join(src, "approvals"))[0];
    const record = JSON.parse(readFileSync(join(src, "approvals", approval), "utf8"));
    const cases: [string, string, Record<string, unknown>, RegExp][] = [
      ["planted", "chk_000000000000.json", { checkpoint_id: "chk_000000000000" }, /a checkpoint this run never had/],
      ["renamed", approval, { episode_id: "ep_other" }, /names ep_other\//],
      ["misspelt", approval, { decision: "Approved" }, /neither "approved" nor "rejected"/],
      // Found by an audit: a record rewritten while its approved action ran (after the resume had read and consumed
      // it) was sealed and attested, decisions[].by naming someone the log's run.resume event does not.
      [
        "rewritten",
        approval,
        { by: "mallory" },
        /its by is not the one the run\.resume event that applied it recorded/,
      ],
      ["renoted", approval, { note: "mallory checked it" }, /its note is not the one the run\.resume event/],
      ["unbound", approval, { checkpoint_digest: `sha256:${"0".repeat(64)}` }, /decided another pending action/],
      ["unconsumed", approval, { consumed_by: "ev_0" }, /consumed_by "ev_0" names no run\.resume event/],
      // Found by an audit: the applied decision rewritten as one never applied (by someone else, the other way),
      // which no check compared with the run.resume event that applied it.
      [
        "un-applied",
        approval,
        { decision: "rejected", consumed_at: null, consumed_by: null, claimed_by: "mallory" },
        /it says it was never applied \(consumed_at null\), but the run\.resume event ev_\w+ applied a decision/,
      ],
    ];
    for (const [what, file, change, message] of cases) {
      const dir = join(tmp.path, what, id);
      cpSync(src, dir, { recursive: true });
      writeFileSync(join(dir, "approvals", file), JSON.stringify({ ...record, ...change }, null, 2));
      resealed(dir, `approvals/${file}`);
      const r = cli(["attest", dir, "--key", key.private_key]);
      assert.equal(r.code, 2, `${what}: ${r.stderr}`);
      assert.match(r.stderr, message, what);
    }
  });

  test("a checkpoint or a used decision deleted before the seal: not attested (2), warned of by validate", () => {
    // Found by an audit: deleted, the episode was attested with decisions: [], its log still applying the decision.
    const src = join(root, "episodes", id);
    const [approval] = readdirSync(join(src, "approvals"));
    const cases: [string, string[], RegExp][] = [
      [
        "no-approval",
        [`approvals/${approval}`],
        /approvals\/chk_\w+\.json: .*missing: the run\.resume event ev_\w+ applied/,
      ],
      ["no-checkpoint", [`approvals/${approval}`, `checkpoints/${approval}`], /missing: a run\.checkpoint event/],
    ];
    for (const [what, gone, message] of cases) {
      const dir = join(tmp.path, what, id);
      cpSync(src, dir, { recursive: true });
      for (const name of gone) rmSync(join(dir, name));
      resealed(dir);
      const r = cli(["attest", dir, "--key", key.private_key]);
      assert.equal(r.code, 2, `${what}: ${r.stderr}`);
      assert.match(r.stderr, message, what);
      const v = cli(["validate", dir, "--profile", "noema", "--strict"]);
      assert.equal(v.code, 1, `${what}: ${v.stdout}`);
      assert.match(v.stdout, message, what);
    }
  });

  test("without a key, or with a bad key file: a usage error naming it", () => {
    const none = cli(["attest", id], { env: { NOEMA_ROOT: root } });
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^noema: no signing key: give --key FILE or set NOEMA_SIGNING_KEY_FILE/);
    const open = join(tmp.path, "open.key");
    cpSync(key.private_key, open);
    chmodSync(open, 0o644);
    const r = cli(["attest", id, "--key", open], { env: { NOEMA_ROOT: root } });
    assert.equal(r.code, 2);
    assert.match(r.stderr, new RegExp(`^noema: ${open}: mode 0644 lets others read`));
  });
});

/** Why the binary part cannot run here, or null. */
function binaryUnavailable(): string | null {
  const help = spawnSync(bunExecutable(), ["build", "--help"], { encoding: "utf8" });
  if (help.error || !`${help.stdout}${help.stderr}`.includes("--compile")) return "no `bun build --compile`";
  const ossl = spawnSync("openssl", ["pkeyutl", "-help"], { encoding: "utf8" });
  if (ossl.error || !`${ossl.stdout}${ossl.stderr}`.includes("-rawin")) return "no openssl with pkeyutl -rawin";
  return null;
}
const SKIP = binaryUnavailable();
if (SKIP) process.stderr.write(`tests/attest.test.ts: the binary part is skipped: ${SKIP}\n`);

describe("openssl verifies the attestation the compiled binary made", { skip: SKIP ?? false }, () => {
  const work = join(tmp.path, "bin");
  let noema = "";
  // The binary `npm test` built for the CLI children (tests/helpers/cli.ts), else built here while the tests are
  // collected (as tests/binary.test.ts does): a hook would time out on a loaded machine.
  if (!SKIP) {
    mkdirSync(work, { recursive: true });
    noema = BINARY ?? build({ outfile: join(work, "noema") }).outfile;
  }

  test("keys generate, attest with the binary; openssl pkeyutl -verify over the PAE; a changed byte fails", () => {
    const env = { ...process.env, NOEMA_ROOT: root, NO_COLOR: "1" } as Record<string, string>;
    delete env.NOEMA_SIGNING_KEY_FILE;
    const gen = spawnSync(noema, ["keys", "generate", "--out", join(work, "bin.key"), "--json"], { env, cwd: work });
    assert.equal(gen.status, 0, String(gen.stderr));
    const keys = JSON.parse(String(gen.stdout));
    const id = decidedEpisode({ NOEMA_ROOT: root, NOEMA_SIGNING_KEY_FILE: keys.private_key }, "dana");
    const out = join(work, "ep.intoto.json");
    const r = spawnSync(noema, ["attest", id, "--out", out], {
      env: { ...env, NOEMA_SIGNING_KEY_FILE: keys.private_key },
      cwd: work,
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    const envelope: Envelope = JSON.parse(readFileSync(out, "utf8"));
    const body = Buffer.from(envelope.payload, "base64");
    const sig = Buffer.from(envelope.signatures[0].sig, "base64");
    assert.equal(sig.length, 64);
    const good = opensslVerify(keys.public_key, pae(envelope.payloadType, body), sig, work);
    assert.equal(good.code, 0, good.out);
    assert.match(good.out, /Signature Verified Successfully/);
    // The statement is the episode's: openssl checked the bytes that name its files and digests.
    const statement = JSON.parse(body.toString("utf8"));
    const manifest = statement.subject.find((s: { name: string }) => s.name === "manifest.json");
    assert.equal(manifest.digest.sha256, sha256Hex(join(root, "episodes", id, "manifest.json")));
    // One byte of the payload changed: openssl refuses it.
    const changed = Buffer.from(body);
    changed[changed.indexOf("dana")] = "D".charCodeAt(0);
    const bad = opensslVerify(keys.public_key, pae(envelope.payloadType, changed), sig, work);
    assert.notEqual(bad.code, 0, bad.out);
    assert.match(bad.out, /Signature Verification Failure/);
  });
});
