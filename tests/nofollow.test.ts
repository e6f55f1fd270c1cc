/**
 * No write through a symlink inside an episode (issue 12 §4): a symlinked
 * `events.jsonl` or `approvals/` in a crashed or paused episode makes
 * `resume`/`approve` refuse with an error naming the path, and nothing is
 * written outside. Staging directories of killed runs do not pile up.
 *
 * Below the root, at any depth (issue 24 §5): a symlink at each component of
 * each path noema writes (episodes, state, sessions, approvals, `core.json`,
 * `model.jsonl`, …) is refused by the writer that writes it; a planted link
 * is never sealed into an episode; an `approvals/` entry that is a link is
 * refused, not read.
 *
 * @module
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { dirname, join, relative } from "node:path";
import process from "node:process";
import { type AdapterPlugin, approve, EXIT, NoemaError, Redactor, run, validate } from "noema";
import { ArtifactSink } from "../src/runtime/artifact_sink.ts";
import { writeFileAtomic, writeJsonAtomic } from "../src/store/atomic.ts";
import { acquireLock } from "../src/store/lock.ts";
import { claimSession } from "../src/store/session_index.ts";
import { decidedCallId } from "../src/agents/gemini/rewrites.ts";
import { policySnapshotPath } from "../src/runtime/learning.ts";
import { writeManifest } from "../src/store/manifest.ts";
import { JsonlAppender } from "../src/store/jsonl.ts";
import { procStat } from "../src/store/lock.ts";
import { cli, cliCommand, REPO } from "./helpers/cli.ts";
import { runChild } from "./helpers/child.ts";
import { startOpenAiServer } from "./helpers/openai_server.ts";
import { crashedRun } from "./helpers/race.ts";
import { tempDir } from "./helpers/tmp.ts";
import { clearPending, markPending, pendingIds } from "../src/shared_store/pending.ts";

const tmp = tempDir("noema-nofollow-");
after(() => tmp.cleanup());
const root = join(tmp.path, "root");
const outside = join(tmp.path, "outside");
mkdirSync(outside);

const unsafe = (path: string) => (e: unknown) =>
  e instanceof NoemaError && e.code === "unsafe_path" && e.message.includes(path) && /symbolic link/.test(e.message);

describe("store writers refuse symlinks", () => {
  test("JsonlAppender: a symlinked file or directory", () => {
    const dir = join(tmp.path, "w1");
    mkdirSync(dir);
    writeFileSync(join(outside, "log.jsonl"), "");
    symlinkSync(join(outside, "log.jsonl"), join(dir, "events.jsonl"));
    assert.throws(() => new JsonlAppender(join(dir, "events.jsonl")), unsafe(join(dir, "events.jsonl")));
    symlinkSync(outside, join(dir, "sub"));
    assert.throws(() => new JsonlAppender(join(dir, "sub", "x.jsonl")), unsafe(join(dir, "sub")));
    assert.equal(readFileSync(join(outside, "log.jsonl"), "utf8"), "");
    assert.ok(!existsSync(join(outside, "x.jsonl")));
  });

  test("writeFileAtomic: a symlinked directory (approvals -> elsewhere) or target", () => {
    const dir = join(tmp.path, "w2");
    mkdirSync(dir);
    const elsewhere = join(outside, "approvals");
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(dir, "approvals"));
    const target = join(dir, "approvals", "chk_1.json");
    assert.throws(() => writeFileAtomic(target, "{}", { exclusive: true }), unsafe(join(dir, "approvals")));
    assert.deepEqual(readdirSync(elsewhere), []);
    symlinkSync(join(outside, "state.json"), join(dir, "state.json"));
    assert.throws(() => writeFileAtomic(join(dir, "state.json"), "{}"), unsafe(join(dir, "state.json")));
    assert.ok(!existsSync(join(outside, "state.json")));
  });
});

describe("episodes with planted symlinks", () => {
  test("a crashed run whose events.jsonl is a symlink: resume and resume --abort refuse, the outside file is untouched", async () => {
    const work = join(tmp.path, "crash");
    mkdirSync(work);
    const dir = await crashedRun(root, work, "ep_linked_events");
    const events = join(dir, "events.jsonl");
    const planted = join(outside, "events.jsonl");
    copyFileSync(events, planted);
    rmSync(events);
    symlinkSync(planted, events);
    rmSync(join(dir, "lock"), { force: true });
    const before = readFileSync(planted);
    for (const extra of [[], ["--abort"]]) {
      const r = cli(["resume", "ep_linked_events", "--root", root, ...extra]);
      assert.equal(r.code, EXIT.ERROR, r.stderr);
      assert.match(r.stderr, /events\.jsonl: is a symbolic link/);
    }
    assert.deepEqual(readFileSync(planted), before, "nothing appended outside");
    assert.ok(!existsSync(join(dir, "summary.json")));
    assert.ok(!existsSync(join(dir, "manifest.json")));
  });

  test("a paused run whose approvals/ is a symlink: approve refuses, nothing is written outside", async () => {
    const adapter: AdapterPlugin = { name: "ok", create: () => ({ act: () => ({ status: "ok" }) }) };
    const r = await run("review first", { root, using: adapter, steps: ["review:check", "act:work"] });
    assert.equal(r.exit_code, EXIT.PAUSED);
    const elsewhere = join(outside, "approvals-target");
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(r.episode_dir, "approvals"));
    assert.throws(() => approve(r.episode_id, { root }), unsafe(join(r.episode_dir, "approvals")));
    const c = cli(["approve", r.episode_id, "--root", root]);
    assert.notEqual(c.code, 0);
    assert.match(c.stderr, /approvals: is a symbolic link/);
    assert.deepEqual(readdirSync(elsewhere), []);
    // A symlinked events.jsonl in a paused run: approve refuses too (the decision would rest on an outside file).
    rmSync(join(r.episode_dir, "approvals"));
    const events = join(r.episode_dir, "events.jsonl");
    copyFileSync(events, join(outside, "paused-events.jsonl"));
    rmSync(events);
    symlinkSync(join(outside, "paused-events.jsonl"), events);
    assert.throws(() => approve(r.episode_id, { root }), unsafe(events));
  });
});

describe("staging directories of killed runs", () => {
  test("the next run removes those whose owner is dead or that never got a lock; a live one stays", () => {
    const r2 = join(tmp.path, "root2");
    const episodes = join(r2, "episodes");
    const stage = (name: string, lock: Record<string, unknown> | null) => {
      mkdirSync(join(episodes, name), { recursive: true });
      writeFileSync(join(episodes, name, "events.jsonl"), "{}\n");
      if (lock) writeFileSync(join(episodes, name, "lock"), JSON.stringify({ host: hostname(), ...lock }));
    };
    stage(".tmp-ep_dead-1", { pid: 2 ** 22 + 7, purpose: "run" }); // no such pid
    stage(".tmp-ep_live-2", { pid: process.pid, start_ticks: procStat(process.pid)?.startTicks, purpose: "run" });
    stage(".tmp-ep_nolock_old-3", null);
    const hourAgo = Date.now() / 1000 - 3600;
    utimesSync(join(episodes, ".tmp-ep_nolock_old-3"), hourAgo, hourAgo);
    stage(".tmp-ep_nolock_new-4", null);
    const r = cli(["run", "hello", "--root", r2, "-q"]);
    assert.equal(r.code, 0, r.stderr);
    const left = readdirSync(episodes).filter((n) => n.startsWith(".tmp-")).sort();
    assert.deepEqual(left, [".tmp-ep_live-2", ".tmp-ep_nolock_new-4"]);
  });
});

/** A fresh root with one episode directory (`episodes/ep_t`) holding the usual artifacts. */
function freshRoot(name: string): { root: string; dir: string; out: string } {
  const base = join(tmp.path, "below", name);
  const root = join(base, "root");
  const dir = join(root, "episodes", "ep_t");
  mkdirSync(join(dir, "approvals"), { recursive: true });
  mkdirSync(join(dir, "llm"), { recursive: true });
  mkdirSync(join(root, "state", "policies"), { recursive: true });
  mkdirSync(join(root, "sessions", "claude-code"), { recursive: true });
  for (const f of ["events.jsonl", "learn.jsonl", "state.json", "core.json", "model.jsonl"]) {
    writeFileSync(join(dir, f), "");
  }
  const out = join(base, "outside");
  mkdirSync(out, { recursive: true });
  return { root, dir, out };
}

/** Every file and directory under `dir` (relative), to show nothing was added or changed outside. */
function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      out.push(`${relative(dir, p)}${e.isDirectory() ? "/" : `:${readFileSync(p, "utf8")}`}`);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out.sort();
}

/** The name the session index gives session `s1`'s file (asked of the index itself, not assumed). */
function sessionFileName(): string {
  const scratch = join(tmp.path, "session-name");
  claimSession(scratch, "claude-code", "s1", "ep_t");
  return readdirSync(join(scratch, "sessions", "claude-code"))[0];
}

/** Each path noema writes below the root (relative to it), and the real writer that writes it. */
const WRITERS: { path: string; write: (root: string, dir: string) => void }[] = [
  { path: "episodes/ep_t/events.jsonl", write: (_, dir) => sinkOf(dir).appendJsonl("events.jsonl", { id: "e" }) },
  { path: "episodes/ep_t/learn.jsonl", write: (_, dir) => sinkOf(dir).jsonl("learn.jsonl").append({ k: 1 }) },
  { path: "episodes/ep_t/state.json", write: (_, dir) => sinkOf(dir).writeJson("state.json", { version: "1.0" }) },
  {
    path: "episodes/ep_t/core.json",
    write: (_, dir) => sinkOf(dir).writeJson("core.json", { n: 1 }, { durable: false }),
  },
  { path: "episodes/ep_t/model.jsonl", write: (_, dir) => sinkOf(dir).jsonl("model.jsonl").append({ turn: 1 }) },
  {
    path: "episodes/ep_t/approvals/chk_000000000001.json",
    write: (_, dir) => sinkOf(dir).writeJson("approvals/chk_000000000001.json", { d: "approved" }, { exclusive: true }),
  },
  {
    path: "episodes/ep_t/llm/conversation.json",
    write: (_, dir) => sinkOf(dir).writeJson("llm/conversation.json", {}),
  },
  { path: "episodes/ep_t/lock", write: (_, dir) => acquireLock(dir, "test").release() },
  {
    path: "episodes/ep_t/manifest.json",
    write: (_, dir) => writeManifest(dir, "ep_t", [], new Date().toISOString(), null),
  },
  {
    path: "state/policies/p.json",
    write: (root) => writeJsonAtomic(policySnapshotPath(root, "p"), { n: 1 }, { root }),
  },
  {
    path: `sessions/claude-code/${sessionFileName()}`,
    write: (root) => claimSession(root, "claude-code", "s1", "ep_t"),
  },
];

function sinkOf(dir: string): ArtifactSink {
  return new ArtifactSink(dir, new Redactor(), { declare: false });
}

describe("no write below the root passes through a symlink, at any depth", () => {
  for (const w of WRITERS) {
    const parts = w.path.split("/");
    for (let depth = 1; depth <= parts.length; depth++) {
      const at = parts.slice(0, depth).join("/");
      test(`${w.path}: a symlink at ${at}`, () => {
        const { root, dir, out } = freshRoot(`${w.path.replace(/\W/g, "_")}-${depth}`);
        const link = join(root, at);
        const isFile = depth === parts.length;
        // The link leads to a copy of what was there (a directory, or an empty file) outside the root.
        const target = join(out, "target");
        if (isFile) writeFileSync(target, "");
        else cpSync(link, target, { recursive: true });
        rmSync(link, { recursive: true, force: true });
        symlinkSync(target, link);
        const before = tree(out);
        assert.throws(() => w.write(root, dir), unsafe(link), `the writer of ${w.path} refuses ${at}`);
        assert.deepEqual(tree(out), before, "nothing was written outside the root");
      });
    }
  }

  test("a Gemini rewrite record under a symlinked sessions/ is neither read nor removed", () => {
    const { root, out } = freshRoot("gemini-rewrites");
    mkdirSync(join(out, "gemini", "rewrites"), { recursive: true });
    const record = join(out, "gemini", "rewrites", "c2.json");
    writeFileSync(record, JSON.stringify({ schema_version: "gemini-rewrite/1.0", call_id: "c1", rewritten: "c2" }));
    rmSync(join(root, "sessions"), { recursive: true });
    symlinkSync(out, join(root, "sessions"));
    const event = { call_id: "c2" } as Parameters<typeof decidedCallId>[1];
    assert.equal(decidedCallId(root, event), "c2", "taken as no rewrite");
    assert.ok(existsSync(record), "the file outside the root stays");
  });

  test("JsonlAppender: a FIFO where the log should be is refused at once, not opened to wait for a reader", () => {
    const { dir } = freshRoot("jsonl-fifo");
    rmSync(join(dir, "learn.jsonl"));
    assert.equal(spawnSync("mkfifo", [join(dir, "learn.jsonl")]).status, 0);
    assert.throws(
      () => new JsonlAppender(join(dir, "learn.jsonl")),
      (e) => e instanceof NoemaError && e.code === "not_regular" && e.message.includes("learn.jsonl"),
    );
  });

  test("a Gemini rewrite record that is a FIFO is not opened to wait for a writer (the hook would hang)", () => {
    const { root } = freshRoot("gemini-rewrite-fifo");
    const dir = join(root, "sessions", "gemini", "rewrites");
    mkdirSync(dir, { recursive: true });
    const event = { call_id: "c3" } as Parameters<typeof decidedCallId>[1];
    const record = join(dir, "c3.json"); // where the record of a call rewritten to c3 is written
    assert.equal(spawnSync("mkfifo", [record]).status, 0);
    assert.equal(decidedCallId(root, event), "c3", "taken as no rewrite, at once");
  });

  test("a symlinked policy snapshot (state/policies/<id>.json) is not written, and the run still seals", async () => {
    const { root, out } = freshRoot("learn-apply");
    const target = join(out, "snapshot.json");
    writeFileSync(target, "{}\n");
    symlinkSync(target, policySnapshotPath(root, "NoDrop@2.0"));
    const vetoDrop = {
      name: "NoDrop",
      version: "2.0",
      advise: () => ({ kind: "veto" as const, advice: "no drop", confidence: 0.9 }),
    };
    const r = await run("drop", {
      root,
      learn_mode: "apply",
      learn_min_successes: 1,
      policies: [vetoDrop],
      steps: [{ kind: "act", description: "d", inputs: { sql: "DROP TABLE t" } }],
    });
    assert.equal(r.status, "vetoed");
    assert.ok(existsSync(join(r.episode_dir, "manifest.json")), "sealed");
    assert.deepEqual(validate(r.episode_dir).problems, []);
    assert.equal(readFileSync(target, "utf8"), "{}\n", "nothing was written outside the root");
    const record = JSON.parse(readFileSync(join(r.episode_dir, "learn.jsonl"), "utf8").trim());
    const proposal = record.payload.proposal[0];
    assert.equal(proposal.status, "recorded", "not applied");
    assert.match(String(proposal.metadata.not_applied), /symbolic link/);
  });

  test("the root itself may be a symlink (it is where the user pointed)", () => {
    const { root, dir } = freshRoot("root-link");
    const alias = join(dirname(root), "alias");
    symlinkSync(root, alias);
    const aliasDir = join(alias, "episodes", "ep_t");
    for (const w of WRITERS) w.write(alias, aliasDir);
    assert.ok(existsSync(join(dir, "manifest.json")));
  });
});

describe("end to end: the commands refuse, name the link and write nothing outside", () => {
  const fixture = (name: string) => readFileSync(join(REPO, "tests", "fixtures", "claude", `${name}.json`), "utf8");
  const hook = (root: string, ws: string, input: string, ...extra: string[]) =>
    cli(["hook", "claude-code", "--root", root, "--workspace", ws, ...extra], {
      input,
      env: { NOEMA_HOOK_SERVER_DIR: join(tmp.path, "no-such-dir", "x") },
    });

  test("run: <root>/episodes is a symlink (a cloned repository's .noema/episodes)", () => {
    const { root, out } = freshRoot("e2e-episodes");
    rmSync(join(root, "episodes"), { recursive: true });
    symlinkSync(out, join(root, "episodes"));
    const r = cli(["run", "hello", "--root", root, "-q"]);
    assert.equal(r.code, EXIT.ERROR, r.stderr);
    assert.match(r.stderr, /episodes: is a symbolic link/);
    assert.deepEqual(readdirSync(out), []);
  });

  for (const at of ["sessions", "sessions/claude-code"]) {
    test(`hook: ${at} is a symlink`, () => {
      const { root, out } = freshRoot(`e2e-${at.replace("/", "_")}`);
      const ws = join(root, "..", "ws");
      mkdirSync(ws, { recursive: true });
      rmSync(join(root, at), { recursive: true });
      symlinkSync(out, join(root, at));
      const r = hook(root, ws, fixture("UserPromptSubmit"));
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, new RegExp(`${at}: is a symbolic link`));
      assert.deepEqual(readdirSync(out), []);
    });
  }

  test("hook: an episode's core.json is a symlink; Stop does not seal over a planted link", () => {
    const base = join(tmp.path, "e2e-core");
    const root = join(base, "root"), ws = join(base, "ws"), out = join(base, "out");
    mkdirSync(ws, { recursive: true });
    mkdirSync(out, { recursive: true });
    const opened = hook(root, ws, fixture("UserPromptSubmit"), "--no-finish");
    assert.equal(opened.code, 0, opened.stderr);
    const [id] = readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
    const dir = join(root, "episodes", id);
    writeFileSync(join(out, "core.json"), "{}");
    rmSync(join(dir, "core.json"), { force: true });
    symlinkSync(join(out, "core.json"), join(dir, "core.json"));
    const call = hook(root, ws, fixture("PreToolUse_Bash"), "--episode", id);
    assert.notEqual(call.code, 0, "the call is blocked");
    assert.match(call.stderr, /core\.json: is a symbolic link/);
    assert.equal(readFileSync(join(out, "core.json"), "utf8"), "{}");
    // A planted link elsewhere in the episode: Stop refuses to seal it in (verify would call it tampered).
    rmSync(join(dir, "core.json"));
    writeFileSync(join(out, "notes.txt"), "outside");
    symlinkSync(join(out, "notes.txt"), join(dir, "notes.txt"));
    const stop = hook(root, ws, fixture("Stop"), "--episode", id);
    assert.match(stop.stderr, /notes\.txt: is a symbolic link/);
    assert.ok(!existsSync(join(dir, "manifest.json")), "not sealed");
  });

  test("prune: nothing is removed through a symlinked episodes", async () => {
    const base = join(tmp.path, "e2e-prune");
    const root = join(base, "root"), out = join(base, "outside");
    const r = cli(["run", "hello", "--root", root, "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const id = JSON.parse(r.stdout).episode_id as string;
    cpSync(join(root, "episodes"), out, { recursive: true });
    rmSync(join(root, "episodes"), { recursive: true });
    symlinkSync(out, join(root, "episodes"));
    await new Promise((done) => setTimeout(done, 1100));
    const refused = cli(["prune", "--root", root, "--older-than", "1s"]);
    assert.equal(refused.code, EXIT.ERROR, refused.stderr);
    assert.match(refused.stderr, /episodes: is a symbolic link/);
    assert.ok(existsSync(join(out, id, "events.jsonl")), "the episode outside the root is intact");
  });

  test("an approvals/ entry that is a symlink is refused, not read: nothing of its target leaks", async () => {
    const adapter: AdapterPlugin = { name: "ok", create: () => ({ act: () => ({ status: "ok" }) }) };
    const root = join(tmp.path, "e2e-approval");
    const r = await run("review first", { root, using: adapter, steps: ["review:check", "act:work"] });
    assert.equal(r.exit_code, EXIT.PAUSED);
    const chk = readdirSync(join(r.episode_dir, "checkpoints"))[0];
    const secret = join(tmp.path, "e2e-approval-secret");
    writeFileSync(secret, "TOPSECRETWORD and more\n");
    mkdirSync(join(r.episode_dir, "approvals"), { recursive: true });
    const link = join(r.episode_dir, "approvals", chk);
    symlinkSync(secret, link);
    for (const args of [["approve", r.episode_id], ["resume", r.episode_id], ["view", r.episode_id]]) {
      const c = cli([...args, "--root", root]);
      assert.doesNotMatch(c.stdout + c.stderr, /TOPSECRET/, `${args[0]} leaks nothing of the target`);
      if (args[0] !== "view") {
        assert.notEqual(c.code, 0, args[0]);
        assert.match(c.stderr, /is a symbolic link/, args[0]);
      }
    }
    assert.throws(() => approve(r.episode_id, { root }), unsafe(link));
    // A dangling link is refused too, not taken for "no decision yet".
    rmSync(link);
    symlinkSync(join(tmp.path, "nothing-here"), link);
    assert.throws(() => approve(r.episode_id, { root }), unsafe(link));
    assert.ok(!existsSync(join(tmp.path, "nothing-here")));
  });
});

describe("readers never read through a link planted in an episode", () => {
  test("events.jsonl and state.json linked out: every reader refuses, naming the link; nothing of the target shows", async () => {
    const adapter: AdapterPlugin = { name: "ok", create: () => ({ act: () => ({ status: "ok" }) }) };
    const root = join(tmp.path, "read-links");
    const r = await run("read me", { root, using: adapter, steps: ["act:work"] });
    assert.equal(r.exit_code, 0);
    const outsideLog = join(tmp.path, "read-links-outside.jsonl");
    const outsideState = join(tmp.path, "read-links-outside.json");
    writeFileSync(outsideLog, JSON.stringify({ id: "x", phase: "TOPSECRETLINE" }) + "\n");
    writeFileSync(outsideState, JSON.stringify({ secret: "TOPSECRETSTATE" }));
    for (const name of ["events.jsonl", "state.json"]) rmSync(join(r.episode_dir, name));
    symlinkSync(outsideLog, join(r.episode_dir, "events.jsonl"));
    symlinkSync(outsideState, join(r.episode_dir, "state.json"));
    const id = r.episode_id;
    for (
      const args of [["events", id, "--json"], ["state", id], ["view", id], ["plan", id], ["report", id], [
        "validate",
        id,
      ]]
    ) {
      const c = cli([...args, "--root", root]);
      assert.doesNotMatch(c.stdout + c.stderr, /TOPSECRET/, `${args[0]} read through the link`);
      assert.notEqual(c.code, 0, args[0]);
      assert.match(c.stdout + c.stderr, /is a symbolic link/, args[0]);
    }
    const list = cli(["list", "--json", "--root", root]);
    assert.doesNotMatch(list.stdout, /TOPSECRET/);
    assert.match(JSON.parse(list.stdout)[0].error, /state\.json: is a symbolic link/);
  });
});

describe("sealing never includes a planted symlink", () => {
  test("writeManifest refuses a link at any depth, naming it; nothing is sealed", () => {
    const { dir, out } = freshRoot("seal-deep");
    writeFileSync(join(out, "x"), "outside");
    symlinkSync(join(out, "x"), join(dir, "approvals", "chk_000000000009.json"));
    assert.throws(
      () => writeManifest(dir, "ep_t", [], new Date().toISOString(), null),
      unsafe(join(dir, "approvals", "chk_000000000009.json")),
    );
    assert.ok(!existsSync(join(dir, "manifest.json")));
  });

  test("resume --abort of a crashed run with a link planted in a sub-directory refuses before writing", async () => {
    const work = join(tmp.path, "crash-deep");
    mkdirSync(work);
    const dir = await crashedRun(root, work, "ep_deep_link");
    mkdirSync(join(dir, "checkpoints"), { recursive: true });
    symlinkSync(join(outside, "anything"), join(dir, "checkpoints", "chk_000000000001.json"));
    rmSync(join(dir, "lock"), { force: true });
    const r = cli(["resume", "ep_deep_link", "--root", root, "--abort"]);
    assert.equal(r.code, EXIT.ERROR, r.stderr);
    assert.match(r.stderr, /checkpoints\/chk_000000000001\.json: is a symbolic link/);
    assert.ok(!existsSync(join(dir, "manifest.json")));
    assert.ok(!existsSync(join(dir, "summary.json")));
  });
});

describe("sealing never includes a planted FIFO", () => {
  test("resume --abort of a paused run with a FIFO in approvals/ refuses, naming it; nothing is sealed", async () => {
    const base = join(tmp.path, "fifo-seal");
    const r = await run("paused", { root: join(base, "root"), steps: ["review:check"] });
    assert.equal(r.exit_code, EXIT.PAUSED);
    mkdirSync(join(r.episode_dir, "approvals"), { recursive: true });
    assert.equal(spawnSync("mkfifo", [join(r.episode_dir, "approvals", `${r.checkpoint_id}.json`)]).status, 0);
    const x = cli(["resume", r.episode_id, "--root", join(base, "root"), "--abort"]);
    assert.equal(x.code, EXIT.ERROR, x.stderr);
    assert.match(x.stderr, /approvals\/chk_\w+\.json: is not a regular file/);
    assert.ok(!existsSync(join(r.episode_dir, "manifest.json")), "not sealed");
  });
});

describe("an llm run: resume --abort does not seal over a planted link", () => {
  test("a paused llm episode with a link in it: resume --abort refuses, naming it; nothing is sealed", async () => {
    const base = join(tmp.path, "llm-abort");
    const root = join(base, "root"), ws = join(base, "ws");
    mkdirSync(ws, { recursive: true });
    const gate = join(base, "gate.ts");
    writeFileSync(
      gate,
      `export default { name: "Gate", version: "1.0", advise(s) {
        if (s.action.tool === "write_file") return { kind: "veto", advice: "ask", requires_approval: true };
      } };\n`,
    );
    const server = await startOpenAiServer([
      { tool_calls: [{ id: "t1", name: "write_file", arguments: '{"path":"a.txt","content":"x"}' }] },
    ]);
    const [cmd, ...pre] = cliCommand();
    const env = { ...process.env, NO_COLOR: "1" } as Record<string, string>;
    delete env.NOEMA_ROOT;
    const noema = (...args: string[]) => runChild(cmd, [...pre, ...args], { env, cwd: base, timeoutMs: 60_000 });
    let id: string;
    try {
      const r = await noema(
        ...["run", "write a", "--model", "openai-compatible:m", "--base-url", server.url, "--workspace", ws],
        ...["--policy", gate, "--root", root, "--json"],
      );
      assert.equal(r.code, EXIT.PAUSED, r.stderr);
      id = JSON.parse(r.stdout).episode_id;
    } finally {
      await server.close();
    }
    const dir = join(root, "episodes", id);
    writeFileSync(join(base, "elsewhere.txt"), "outside");
    symlinkSync(join(base, "elsewhere.txt"), join(dir, "llm", "planted.json"));
    const aborted = await noema("resume", id, "--abort", "--root", root);
    assert.equal(aborted.code, EXIT.ERROR, aborted.stderr);
    assert.match(aborted.stderr, /llm\/planted\.json: is a symbolic link/);
    assert.ok(!existsSync(join(dir, "manifest.json")), "not sealed");
    assert.ok(!existsSync(join(dir, "summary.json")));
  });
});

describe("publish-pending markers under a symlinked state/", () => {
  test("are neither listed nor removed through the link", () => {
    const { root, out } = freshRoot("publish-pending");
    mkdirSync(join(out, "publish-pending"), { recursive: true });
    writeFileSync(join(out, "publish-pending", "ep_t"), "");
    rmSync(join(root, "state"), { recursive: true });
    symlinkSync(out, join(root, "state"));
    assert.deepEqual(pendingIds(root), [], "nothing listed through the link");
    clearPending(root, "ep_t");
    assert.ok(existsSync(join(out, "publish-pending", "ep_t")), "the file outside the root stays");
    assert.throws(() => markPending(root, "ep_u"), unsafe(join(root, "state")));
  });
});
