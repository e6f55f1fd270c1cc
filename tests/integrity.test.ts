/**
 * `noema verify` misses nothing (issue 12 §4, §6): with a signing key an
 * unsigned, stripped, junk-suffixed or duplicate-key manifest fails without
 * `--strict`; every unlisted entry is reported (symlinks and temp names too),
 * except the lock of a live run; the manifest binds the episode id; required
 * artifacts must be listed.
 *
 * @module
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { procStat } from "../src/store/lock.ts";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const KEY = "integrity test key";
const tmp = tempDir("noema-integrity-");
const root = join(tmp.path, "root");
const signedEnv = { NOEMA_ROOT: root, NOEMA_SIGNING_KEY: KEY };
const plainEnv = { NOEMA_ROOT: root };
let signed = "";
let unsigned = "";
let n = 0;

function fresh(env: Record<string, string>): string {
  const r = cli(["run", "Say hello", "-q"], { env });
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim();
}

/** A copy of an episode under a new id whose manifest is rewritten by `edit` (as text). */
function copy(from: string, edit: (text: string) => string = (t) => t): { id: string; dir: string } {
  const id = `ep_copy_${n++}`;
  const dir = join(root, "episodes", id);
  cpSync(join(root, "episodes", from), dir, { recursive: true });
  const path = join(dir, "manifest.json");
  const text = readFileSync(path, "utf8").replace(`"episode_id": "${from}"`, `"episode_id": "${id}"`);
  writeFileSync(path, edit(text));
  return { id, dir };
}

function verify(id: string, env: Record<string, string>, ...extra: string[]) {
  const r = cli(["verify", id, "--json", ...extra], { env });
  const report = JSON.parse(r.stdout);
  return {
    code: r.code,
    report,
    kinds: report.issues.map((i: { kind: string; file: string }) => `${i.kind}:${i.file}`),
  };
}

before(() => {
  signed = fresh(signedEnv);
  unsigned = fresh(plainEnv);
});
after(() => tmp.cleanup());

describe("signatures, with NOEMA_SIGNING_KEY set", () => {
  test("the untouched signed run verifies", () => {
    assert.equal(verify(signed, signedEnv).code, 0);
  });

  test("an unsigned manifest fails without --strict (exit 4)", () => {
    const r = verify(unsigned, signedEnv);
    assert.equal(r.code, 4);
    assert.deepEqual(r.kinds, ["unsigned:manifest.json"]);
  });

  test("a stripped signature (the member removed, or null) fails (exit 4)", () => {
    const gone = copy(signed, (t) => {
      const m = JSON.parse(t);
      delete m.signature;
      return JSON.stringify(m, null, 2);
    });
    // The signature covers the id, so re-signing is not possible; a copy under a new id is unsigned here anyway.
    assert.equal(verify(gone.id, signedEnv).code, 4);
    const nulled = copy(signed, (t) => t.replace(/"signature": \{[^}]*\}/, '"signature": null'));
    assert.equal(verify(nulled.id, signedEnv).code, 4);
  });

  test("a signature value with trailing junk is decoded strictly: exit 4", () => {
    const dir = join(root, "episodes", signed);
    const original = readFileSync(join(dir, "manifest.json"), "utf8");
    try {
      for (const junk of ["==", "AA", "!x", " "]) {
        writeFileSync(join(dir, "manifest.json"), original.replace(/("value": ")([A-Za-z0-9_-]+)"/, `$1$2${junk}"`));
        const r = verify(signed, signedEnv);
        assert.equal(r.code, 4, `junk ${JSON.stringify(junk)}`);
        assert.equal(r.report.signature.status, "bad_signature");
      }
    } finally {
      writeFileSync(join(dir, "manifest.json"), original);
    }
    assert.equal(verify(signed, signedEnv).code, 0);
  });

  test("a signed manifest with a duplicate key fails: the signed bytes are ambiguous (exit 4)", () => {
    const dir = join(root, "episodes", signed);
    const original = readFileSync(join(dir, "manifest.json"), "utf8");
    try {
      // JSON.parse keeps the last value (the signed one); another reader may keep the first.
      writeFileSync(
        join(dir, "manifest.json"),
        original.replace("{\n", '{\n  "created_at": "1999-01-01T00:00:00.000Z",\n'),
      );
      const r = verify(signed, signedEnv);
      assert.equal(r.code, 4);
      assert.match(r.report.signature.message, /repeats keys/);
      assert.ok(r.kinds.includes("bad_manifest:manifest.json"));
    } finally {
      writeFileSync(join(dir, "manifest.json"), original);
    }
  });
});

describe("what the manifest must cover", () => {
  test("a signed episode copied under another id fails (the manifest binds the id)", () => {
    const id = "ep_stolen";
    cpSync(join(root, "episodes", signed), join(root, "episodes", id), { recursive: true });
    const r = verify(id, signedEnv);
    assert.equal(r.code, 2);
    assert.ok(r.kinds.includes("wrong_episode:manifest.json"), r.kinds.join());
    rmSync(join(root, "episodes", id), { recursive: true });
  });

  test("events.jsonl deleted together with its manifest entry: required artifact missing (exit 3)", () => {
    const { id, dir } = copy(unsigned, (t) => {
      const m = JSON.parse(t);
      m.files = m.files.filter((f: { name: string }) => f.name !== "events.jsonl");
      return JSON.stringify(m, null, 2) + "\n";
    });
    rmSync(join(dir, "events.jsonl"));
    const r = verify(id, plainEnv);
    assert.equal(r.code, 3);
    assert.ok(r.kinds.includes("missing:events.jsonl"), r.kinds.join());
  });

  test("unlisted entries are reported: a symlink, a file with a temp-like name, a nested file", () => {
    const { id, dir } = copy(unsigned);
    symlinkSync("/etc/hostname", join(dir, "events.jsonl.extra"));
    writeFileSync(join(dir, "notes.tmp-1"), "hidden?");
    mkdirSync(join(dir, "snapshots-x"));
    writeFileSync(join(dir, "snapshots-x", "copy.json"), "{}");
    const r = verify(id, plainEnv);
    assert.equal(r.code, 2);
    for (const k of ["unsafe_path:events.jsonl.extra", "unlisted:notes.tmp-1", "unlisted:snapshots-x/copy.json"]) {
      assert.ok(r.kinds.includes(k), `${k} in ${r.kinds.join()}`);
    }
  });

  test("a lock that carries more than a lock, or a lock's temp name holding anything else, is unlisted", () => {
    // Found by an audit: a `lock` naming a live pid (init) with a hidden decision in it, and `lock.tmp-evil`, rode in
    // a sealed episode unreported by verify --strict and attest --verify.
    const { id, dir } = copy(unsigned);
    const ticks = procStat(1)?.startTicks ?? null;
    const live = { pid: 1, host: hostname(), started_at: "", purpose: "run", start_ticks: ticks, nonce: "n1" };
    writeFileSync(join(dir, "lock"), JSON.stringify({ ...live, hidden: { decision: "approved", by: "mallory" } }));
    writeFileSync(join(dir, "lock.tmp-evil"), JSON.stringify({ decision: "approved", by: "mallory" }));
    let r = verify(id, plainEnv);
    assert.equal(r.code, 2, r.kinds.join());
    for (const k of ["unlisted:lock", "unlisted:lock.tmp-evil"]) assert.ok(r.kinds.includes(k), `${k} in ${r.kinds}`);
    // A lock and nothing more, its owner alive on this host: left out, as before.
    writeFileSync(join(dir, "lock"), JSON.stringify(live));
    rmSync(join(dir, "lock.tmp-evil"));
    r = verify(id, plainEnv);
    assert.equal(r.code, 0, r.kinds.join());
  });

  test("a planted file name with terminal escapes and newlines is shown escaped, on its own line", () => {
    // Found by an audit: a name holding ESC sequences and CRs redrew verify's output as "status : ok, issues : none".
    const { id, dir } = copy(unsigned);
    const name = "z\r\x1b[2K\x1b[13Astatus   : ok\nissues   : none\x1b[8m";
    writeFileSync(join(dir, name), "x");
    const r = cli(["verify", id], { env: plainEnv });
    assert.equal(r.code, 2, r.stderr);
    assert.ok(!r.stdout.includes("\x1b") && !r.stdout.includes("\r"), "no escape or carriage return reaches stdout");
    assert.equal(r.stdout.split("\n").filter((l) => l.startsWith("issues")).length, 2, "issues : and issues detail:");
    assert.ok(
      r.stdout.includes("- z\\x0d\\x1b[2K\\x1b[13Astatus   : ok\\nissues   : none\\x1b[8m: unlisted"),
      r.stdout,
    );
  });

  test("the lock of a live run is not reported; a stale one is cleared", () => {
    const { id, dir } = copy(unsigned);
    const lock = (pid: number, ticks: number | null) =>
      writeFileSync(
        join(dir, "lock"),
        JSON.stringify({ pid, host: hostname(), started_at: "", purpose: "run", start_ticks: ticks, nonce: "n1" }),
      );
    lock(process.pid, procStat(process.pid)?.startTicks ?? null);
    let r = verify(id, plainEnv);
    assert.equal(r.code, 0, r.kinds.join());
    assert.ok(!r.kinds.some((k: string) => k.endsWith(":lock")));
    lock(process.pid, -1); // our pid, another start time: its owner is gone
    r = verify(id, plainEnv);
    assert.equal(r.code, 0);
    // A sealed episode's lock whose owner is gone was left by a writer killed after sealing (issue 24): verify
    // clears it (taken over, then removed, so a live process that takes it meanwhile keeps it); nothing to warn of.
    assert.ok(!r.kinds.some((k: string) => k.endsWith(":lock")), r.kinds.join());
    assert.equal(existsSync(join(dir, "lock")), false);
  });

  test("another host's lock in a sealed episode is said (held_lock), not skipped: nothing rides in it unseen", () => {
    const id = fresh(signedEnv), dir = join(root, "episodes", id);
    const lock = { pid: 1, host: "elsewhere.invalid", purpose: "run", nonce: "n2" };
    // More than a lock in it: a file like any other, unlisted (exit 2).
    writeFileSync(join(dir, "lock"), JSON.stringify({ ...lock, anything: "unsigned data" }));
    let r = verify(id, signedEnv);
    assert.equal(r.code, 2, r.kinds.join());
    assert.ok(r.kinds.includes("unlisted:lock"), r.kinds.join());
    writeFileSync(join(dir, "lock"), JSON.stringify(lock));
    r = verify(id, signedEnv);
    assert.equal(r.code, 0, r.kinds.join()); // a warning: that host may be verifying it
    assert.ok(r.kinds.includes("held_lock:lock"), r.kinds.join());
    r = verify(id, signedEnv, "--strict");
    assert.notEqual(r.code, 0, "strict: a warning counts");
    assert.equal(existsSync(join(dir, "lock")), true, "another host's lock is never taken");
  });

  test("resume killed after sealing, before removing its lock: the next verify and list see a clean sealed run", () => {
    const id = fresh(plainEnv);
    const dir = join(root, "episodes", id);
    // What such a kill leaves: the sealed artifacts and the lock of a process that is gone (a child that exited).
    const gone = spawnSync(process.execPath, ["-e", "0"]).pid!;
    writeFileSync(
      join(dir, "lock"),
      JSON.stringify({
        pid: gone,
        host: hostname(),
        started_at: "",
        purpose: "resume",
        start_ticks: null,
        nonce: "n2",
      }),
    );
    const r = verify(id, plainEnv);
    assert.equal(r.code, 0);
    assert.deepEqual(r.kinds.filter((k: string) => k.includes("lock")), []);
    assert.equal(existsSync(join(dir, "lock")), false);
    const listed = cli(["list", "--json"], { env: plainEnv });
    const entry = JSON.parse(listed.stdout).find((e: { episode_id: string }) => e.episode_id === id);
    assert.equal(entry?.run_state, "terminal", listed.stdout);
  });
});
