// deno-lint-ignore-file no-explicit-any -- tests read artifacts as loose JSON
/**
 * The episode core (issue 13 §1): open → propose (allow / patch / deny / ask)
 * → record → finish validates; another process attaches and continues the
 * same episode; several processes proposing and recording at once leave a
 * valid log with every call and no torn line.
 */
import { proposalDigest } from "../src/runtime/core/call_reuse.ts";
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { applyPatch, approve, EpisodeCore, reconstructPlan, reject, validate } from "noema";
import { REPO, runtimeCommand } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir();
after(() => tmp.cleanup());
const root = join(tmp.path, "root");
const policy = join(tmp.path, "agent-guard.ts");
writeFileSync(
  policy,
  `export default {
  name: "AgentGuard",
  version: "1.0",
  advise(state) {
    const c = state.action.command;
    if (/rm -rf/.test(c)) return { kind: "veto", advice: "no rm -rf", confidence: 0.9 };
    if (/--force(\\s|$)/.test(c)) {
      return { kind: "intervention", advice: "lease", patch: { command: c.replace("--force", "--force-with-lease") } };
    }
    if (/deploy/.test(c)) return { kind: "veto", advice: "needs a human", confidence: 0.9, requires_approval: true };
    if (state.outcomes.actions.length > 0) return { kind: "hint", advice: "seen " + state.outcomes.actions.length };
  },
};
`,
);

function lines(dir: string): string[] {
  return readFileSync(join(dir, "events.jsonl"), "utf8").split("\n");
}
function events(dir: string): any[] {
  return lines(dir).filter((l) => l !== "").map((l) => JSON.parse(l));
}
function json(dir: string, name: string): any {
  return JSON.parse(readFileSync(join(dir, name), "utf8"));
}
function valid(dir: string) {
  assert.deepEqual(validate(dir).problems, [], `${dir} validates`);
}

/** A new episode whose one call, `deploy`, the policy holds for approval; closed, paused at its checkpoint. */
async function askedDeploy(task: string, using: string, call_id: string) {
  const core = await EpisodeCore.open(task, { root, using, policies: [policy] });
  const call = { kind: "tool", tool: "Bash", input: { command: "deploy" }, call_id } as const;
  const ask = await core.propose(call);
  assert.equal(ask.verdict, "ask");
  core.close();
  return { core, call, ask };
}

/** Runs the driver in a child process under the runtime running the tests. */
function driver(
  episodeId: string,
  callIds: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string; err: string; signal: string | null }> {
  const script = join(REPO, "tests", "helpers", "core_driver.ts");
  const [command, ...args] = [...runtimeCommand(), script];
  return new Promise((resolve) => {
    const child = spawn(command, [...args, root, episodeId, ...callIds], {
      cwd: REPO,
      env: { ...process.env, ...env },
    });
    let out = "", err = "";
    child.stdout.on("data", (d) => out += d);
    child.stderr.on("data", (d) => err += d);
    child.on("close", (code, signal) => resolve({ code, out, err, signal }));
  });
}

describe("EpisodeCore", () => {
  test("an episode removed from disk while open is not made again: flush, suspend, resume and close write nothing", async () => {
    for (const removedBefore of ["flush", "resume"] as const) {
      const core = await EpisodeCore.open(`removed before ${removedBefore}`, {
        root,
        using: "claude-code",
        policies: [policy],
      });
      await core.propose({ kind: "tool", tool: "Bash", input: { command: "ls" }, call_id: "c1" });
      await core.record("c1", { status: "ok", outcome: "exit 0", duration_ms: 1 });
      if (removedBefore === "resume") core.suspend(); // what a resident hook server does between calls
      rmSync(core.dir, { recursive: true, force: true });
      if (removedBefore === "flush") {
        core.flush();
        assert.equal(core.closed, true, "closed, as a removed episode cannot be written");
      } else assert.equal(core.resume(100), false, "nothing to resume");
      core.close();
      assert.equal(existsSync(core.dir), false, `removed before ${removedBefore}: not made again`);
    }
  });

  test("suspended twice while another writer appends: resume says the loaded episode is stale", async () => {
    // Found by an audit: the resident server suspends idle episodes again after each call; a second suspend re-read the
    // log's size, hid another process's events, and resume() trusted the stale episode (an invalid log followed).
    const core = await EpisodeCore.open("suspended twice", { root, using: "claude-code", policies: [policy] });
    core.suspend();
    const other = await EpisodeCore.attach(core.episodeId, { root });
    await other.propose({ kind: "tool", tool: "Bash", input: { command: "ls" }, call_id: "elsewhere" });
    await other.record("elsewhere", { status: "ok", outcome: "exit 0", duration_ms: 1 });
    other.close();
    core.suspend(); // again, as the server's idle timer does: nothing to let go
    assert.equal(core.resume(1000), false, "another process wrote the episode: attach again");
    const again = await EpisodeCore.attach(core.episodeId, { root });
    assert.equal(again.knowsCall("elsewhere"), true);
    again.close();
  });

  test("a call whose input holds a lone surrogate is refused naming where; nothing is written for it", async () => {
    const core = await EpisodeCore.open("Edit a file", { root, using: "claude-code" });
    try {
      const before = readFileSync(join(core.dir, "events.jsonl"), "utf8");
      await assert.rejects(
        core.propose({
          kind: "tool",
          tool: "MultiEdit",
          input: { file_path: "a.txt", edits: [{ old_string: "a", new_string: "b\udc00" }] },
          call_id: "c-lone",
        }),
        (e: Error & { exitCode?: number }) => {
          assert.match(
            e.message,
            /the MultiEdit call's input\.edits\[0\]\.new_string: a string holds a lone UTF-16 surrogate/,
          );
          assert.equal(e.exitCode, 2);
          return true;
        },
      );
      assert.equal(readFileSync(join(core.dir, "events.jsonl"), "utf8"), before, "no event for the refused call");
      // A well-formed pair (an emoji) and a backslash followed by "ud800" are text: proposed as usual.
      const ok = await core.propose({
        kind: "tool",
        tool: "Bash",
        input: { command: "echo \u{1F600} '\\ud800'" },
        call_id: "c-text",
      });
      assert.equal(ok.verdict, "allow");
      await core.finish();
      valid(core.dir);
    } finally {
      core.close();
    }
  });

  test("open → propose (allow, patch, deny, ask) → record → finish: one valid episode", async () => {
    const core = await EpisodeCore.open("Tidy the repo", { root, using: "claude-code", policies: [policy] });
    const allow = await core.propose({ kind: "tool", tool: "Bash", input: { command: "ls" }, call_id: "c1" });
    assert.equal(allow.verdict, "allow");
    assert.equal(allow.step_id, "step-1");
    const logged = events(core.dir);
    assert.equal(
      logged.find((e) => e.phase === "governance" && e.payload.step_id === "step-1")?.payload.decision,
      "allow",
      "the decision is on disk when propose returns (before the agent acts on it)",
    );
    assert.deepEqual(
      await core.propose({ kind: "tool", tool: "Bash", input: { command: "ls" }, call_id: "c1" }),
      allow,
      "propose is idempotent per call_id",
    );
    await core.record("c1", { status: "ok", outcome: "exit 0", output: { stdout: "a.txt" }, duration_ms: 3 });
    const patch = await core.propose({
      kind: "tool",
      tool: "Bash",
      input: { command: "git push --force" },
      call_id: "c2",
    });
    assert.equal(patch.verdict, "patch");
    assert.equal(patch.input.command, "git push --force-with-lease");
    assert.deepEqual(patch.hints, []);
    await core.record("c2", { status: "error", error: { type: "Exit", message: "exit 1" } });
    const deny = await core.propose({ kind: "tool", tool: "Bash", input: { command: "rm -rf /" }, call_id: "c3" });
    assert.equal(deny.verdict, "deny");
    assert.match(deny.reason ?? "", /no rm -rf/);
    assert.equal(deny.policy_id, "AgentGuard@1.0");
    const edit = await core.propose({
      kind: "tool",
      tool: "Edit",
      input: { file_path: "src/a.ts", old_string: "a", new_string: "b" },
      call_id: "c4",
    });
    assert.equal(edit.verdict, "allow");
    assert.deepEqual(edit.hints, ["seen 3"], "the policy sees the actions so far (the denied one included, skipped)");
    await core.record("c4", { status: "ok" });
    const ask = await core.propose({ kind: "tool", tool: "Bash", input: { command: "deploy prod" }, call_id: "c5" });
    assert.equal(ask.verdict, "ask");
    assert.ok(ask.checkpoint_id);
    // Paused: no other call until a human decides; the checkpoint stays the last event (what approve checks).
    await assert.rejects(
      core.propose({ kind: "tool", tool: "Bash", input: { command: "ls" }, call_id: "c6" }),
      /paused, waiting for approval; no other call can be proposed until it is decided/,
    );
    assert.equal(events(core.dir).at(-1).event_type, "run.checkpoint");
    core.close();

    // The paused call is approved; proposing the same call again now allows it (another process would do the same).
    approve(core.episodeId, { root, by: "ana" });
    const again = await EpisodeCore.attach(core.episodeId, { root });
    const approved = await again.propose({
      kind: "tool",
      tool: "Bash",
      input: { command: "deploy prod" },
      call_id: "c5",
    });
    assert.equal(approved.verdict, "allow");
    await again.record("c5", { status: "ok", duration_ms: 2 });
    const result = await again.finish();
    assert.equal(result.status, "ok");
    assert.equal(result.exit_code, 0);
    valid(core.dir);

    const ev = events(core.dir);
    const state = json(core.dir, "state.json");
    assert.deepEqual(state.plan.steps.map((s: any) => s.status), ["done", "failed", "vetoed", "done", "done"]);
    assert.deepEqual(reconstructPlan(ev)!.steps.map((s) => s.status), state.plan.steps.map((s: any) => s.status));
    assert.equal(state.episode.using, "claude-code");
    const summary = json(core.dir, "summary.json");
    assert.equal(summary.metrics.act_count, 4);
    assert.equal(summary.metrics.veto_count, 1);
    assert.ok(summary.metrics.latencies.waiting_ms >= 0);
    const candidates = ev.filter((e) => e.phase === "action_candidate");
    assert.equal(candidates.length, 5);
    assert.equal(candidates[1].payload.payload.input.command, "git push --force-with-lease");
    assert.ok(ev.some((e) => e.event_type === "run.checkpoint") && ev.some((e) => e.event_type === "run.resume"));
  });

  test("on_ask defer: an ask waits for pauseDeferred(), so the calls decided before it run and are recorded first", async () => {
    const core = await EpisodeCore.open("parallel calls", { root, using: "llm", policies: [policy] });
    const call = (command: string, call_id: string) =>
      core.propose({ kind: "tool", tool: "Bash", input: { command }, call_id, on_ask: "defer" });
    const ls = await call("ls", "d1");
    const ask = await call("deploy", "d2");
    assert.deepEqual([ls.verdict, ask.verdict, ask.checkpoint_id], ["allow", "ask", undefined]);
    await assert.rejects(
      core.propose({ kind: "tool", tool: "Bash", input: { command: "pwd" }, call_id: "d3" }),
      /paused, waiting for approval/,
    );
    await core.record("d1", { status: "ok", output: "a.txt" });
    assert.deepEqual(core.waitingFor(), { tool: "Bash", step_id: "step-2" });
    const checkpoint = core.pauseDeferred();
    assert.match(checkpoint!, /^chk_/);
    assert.equal(core.pauseDeferred(), null, "one pause");
    const ev = events(core.dir);
    assert.deepEqual(ev.filter((e) => e.phase === "act").map((e) => e.payload.step_id), ["step-1"]);
    assert.equal(ev.at(-1).event_type, "run.checkpoint");
    core.close();
    approve(core.episodeId, { root, by: "ana" });
    const again = await EpisodeCore.attach(core.episodeId, { root });
    const approved = await again.propose({ kind: "tool", tool: "Bash", input: { command: "deploy" }, call_id: "d2" });
    assert.equal(approved.verdict, "allow");
    await again.record("d2", { status: "ok" });
    assert.equal((await again.finish()).status, "ok");
    valid(core.dir);
  });

  test('an asked call is let through only by a decision of exactly "approved" ("Rejected" denies it)', async () => {
    const { core, call, ask } = await askedDeploy("misspelt decision", "llm", "m1");
    reject(core.episodeId, { root });
    const path = join(core.dir, "approvals", `${ask.checkpoint_id}.json`);
    writeFileSync(path, readFileSync(path, "utf8").replace('"rejected"', '"Rejected"'));
    const again = await EpisodeCore.attach(core.episodeId, { root });
    const decided = await again.propose(call);
    assert.equal(decided.verdict, "deny");
    assert.match(decided.reason ?? "", /neither "approved" nor "rejected"/);
    await again.finish();
  });

  test("a decision not bound to its checkpoint is not acted on: the call stays asked, saying why", async () => {
    const { core, call, ask } = await askedDeploy("unbound decision", "claude-code", "u1");
    approve(core.episodeId, { root, by: "ana" });
    const path = join(core.dir, "approvals", `${ask.checkpoint_id}.json`);
    const decided = readFileSync(path, "utf8");
    const look = async () => {
      const again = await EpisodeCore.attach(core.episodeId, { root });
      try {
        return await again.propose(call);
      } finally {
        again.close();
      }
    };
    // A decision made on another checkpoint (its digest), or recorded without one: the call is neither let through
    // nor denied, and the decision is not consumed.
    const cases: [string, RegExp][] = [
      [
        decided.replace(
          /"checkpoint_digest": "sha256:[0-9a-f]+"/,
          '"checkpoint_digest": "sha256:' + "0".repeat(64) + '"',
        ),
        /changed since it was decided on/,
      ],
      [decided.replace(/"checkpoint_digest": "sha256:[0-9a-f]+",?/, ""), /has no checkpoint_digest/],
      [decided.replace(/"episode_id": "[^"]+"/, '"episode_id": "ep_other"'), /the decision names ep_other\//],
    ];
    for (const [text, why] of cases) {
      assert.notEqual(text, decided);
      writeFileSync(path, text);
      const d = await look();
      assert.equal(d.verdict, "ask", d.reason ?? "");
      assert.equal(d.checkpoint_id, ask.checkpoint_id);
      assert.match(d.reason ?? "", /needs a human; the decision recorded for it is not applied: /);
      assert.match(d.reason ?? "", why);
      assert.equal(JSON.parse(readFileSync(path, "utf8")).consumed_at ?? null, null, "not consumed");
      assert.equal(events(core.dir).at(-1).event_type, "run.checkpoint", "nothing recorded after the checkpoint");
    }
    writeFileSync(path, decided);
    const approved = await look();
    assert.equal(approved.verdict, "allow", "the decision as made lets the call through");
  });

  test("a call id reused for another tool or input is refused and recorded; the same call sent again keeps its decision", async () => {
    const core = await EpisodeCore.open("Reuse", { root, using: "claude-code", policies: [policy] });
    const bash = (command: string, call_id: string) => ({ kind: "tool", tool: "Bash", input: { command }, call_id });
    const ls = await core.propose(bash("ls", "r1"));
    assert.equal(ls.verdict, "allow");
    const reused = await core.propose(bash("rm -x v", "r1")); // no policy denies it: only the reuse does
    assert.equal(reused.verdict, "deny");
    assert.match(reused.reason ?? "", /call id r1 was already used by step-1 for another tool or input/);
    assert.notEqual(reused.step_id, ls.step_id, "a step of its own");
    const otherTool = await core.propose({ kind: "tool", tool: "Read", input: { command: "ls" }, call_id: "r1" });
    assert.equal(otherTool.verdict, "deny", "another tool with the same input");
    assert.deepEqual(await core.propose(bash("ls", "r1")), ls, "the same call sent again: its decision again");
    // A patched call sent again as the agent sent it (before the patch) is the same call.
    const patched = await core.propose(bash("git push --force", "r2"));
    assert.equal(patched.verdict, "patch");
    assert.deepEqual(await core.propose(bash("git push --force", "r2")), patched);
    await core.record("r1", { status: "ok" });
    await core.record("r2", { status: "ok" });
    const ev = events(core.dir);
    const refused = ev.filter((e) => e.phase === "governance" && e.payload.rule === "call_id_reused");
    assert.deepEqual(refused.map((e) => [e.payload.step_id, e.payload.call_id, e.payload.decision]), [
      [reused.step_id, "r1", "veto"],
      [otherTool.step_id, "r1", "veto"],
    ]);
    const vetoed = ev.filter((e) => e.phase === "act" && e.payload.step_status === "vetoed");
    assert.deepEqual(vetoed.map((e) => e.payload.input.command), ["rm -x v", "ls"]);
    await core.finish();
    valid(core.dir);
    assert.equal(json(core.dir, "summary.json").metrics.veto_count, 2);
  });

  test("a call's digest in core.json covers its input with secrets masked, not the secret (no offline guessing)", async () => {
    const secret = "hunter2-pass-9";
    process.env.NOEMA_TEST_DIGEST_SECRET = secret;
    try {
      const core = await EpisodeCore.open("Digest", {
        root,
        using: "claude-code",
        policies: [policy],
        secrets: ["NOEMA_TEST_DIGEST_SECRET"],
      });
      const call = { kind: "tool", tool: "Bash", input: { command: `login -p ${secret}` }, call_id: "d1" } as const;
      assert.equal((await core.propose(call)).verdict, "allow");
      assert.equal((await core.propose(call)).verdict, "allow", "sent again: the same call");
      core.close(); // core.json written
      const stored = JSON.stringify(json(core.dir, "core.json"));
      const raw = proposalDigest(core.episodeId, { tool: "Bash", input: { command: `login -p ${secret}` } });
      const masked = proposalDigest(core.episodeId, {
        tool: "Bash",
        input: { command: "login -p [REDACTED:NOEMA_TEST_DIGEST_SECRET]" },
      });
      assert.equal(stored.includes(raw), false, "no digest of the secret itself");
      assert.ok(stored.includes(masked), "the digest of the masked call");
    } finally {
      delete process.env.NOEMA_TEST_DIGEST_SECRET;
    }
  });

  test("repeatable call ids (an agent without ids): the same call made again is a new step, recorded as its own", async () => {
    const core = await EpisodeCore.open("Repeat", { root, using: "gemini", policies: [policy] });
    const call = (command: string) => ({
      kind: "tool",
      tool: "run_shell_command",
      input: { command },
      call_id: `gem_${command}`,
      repeatable: true,
    });
    const a = await core.propose(call("ls"));
    const again = await core.propose(call("ls")); // the same hook delivered twice before a result: one call
    assert.equal(again.step_id, a.step_id);
    await core.record(core.openCall("gem_ls"), { status: "ok", output: "first" });
    const b = await core.propose(call("ls"));
    assert.notEqual(b.step_id, a.step_id, "after its result, the same call is a new one");
    assert.equal(core.openCall("gem_ls"), "gem_ls#2");
    await core.record(core.openCall("gem_ls"), { status: "ok", output: "second" });
    const denied = await core.propose(call("rm -rf x"));
    assert.equal(denied.verdict, "deny");
    const retried = await core.propose(call("rm -rf x"));
    assert.equal(retried.verdict, "deny");
    assert.notEqual(retried.step_id, denied.step_id, "a retried denied call is consulted again, as a new step");
    await core.finish();
    valid(core.dir);
    const state = json(core.dir, "state.json");
    assert.deepEqual(
      state.outcomes.actions.filter((x: any) => x.tool === "run_shell_command" && x.result_status === "ok").map((
        x: any,
      ) => x.output),
      ["first", "second"],
    );
    assert.equal(state.plan.steps.length, 4);
  });

  test("a second process attaches and continues the same episode", async () => {
    const core = await EpisodeCore.open("Attach", { root, using: "claude-code", policies: [policy] });
    await core.propose({ kind: "tool", tool: "Bash", input: { command: "pwd" }, call_id: "p1" });
    await core.record("p1", { status: "ok" });
    core.close();
    const child = await driver(core.episodeId, ["x1", "x2"]);
    assert.equal(child.code, 0, child.err);
    assert.deepEqual(child.out.trim().split("\n").map((l) => JSON.parse(l).step_id), ["step-2", "step-3"]);
    const back = await EpisodeCore.attach(core.episodeId, { root });
    const r = await back.finish();
    assert.equal(r.status, "ok");
    valid(core.dir);
    const state = json(core.dir, "state.json");
    assert.equal(state.outcomes.actions.length, 3);
    assert.deepEqual(state.plan.steps.map((s: any) => s.status), ["done", "done", "done"]);
    const ids = events(core.dir).map((e) => e.id);
    assert.equal(new Set(ids).size, ids.length, "event ids are unique across processes");
  });

  test("batchEvents: propose and record leave their events in memory until beforeExecute (or the next turn)", async () => {
    // An in-process policy: a policy file's worker answers on a later turn, when the events are written anyway.
    const allowAll = { name: "AllowAll", version: "1.0", advise: () => undefined };
    const core = await EpisodeCore.open("Batched", { root, using: "llm", policies: [allowAll] });
    core.batchEvents = true;
    // No state write of record's own (it writes one when it has spent too little time writing, which a busy machine
    // decides): that write would take the waiting events with it.
    core.autoFlush = false;
    const before = lines(core.dir).length;
    const d = await core.propose({ kind: "tool", tool: "Bash", input: { command: "ls" }, call_id: "b1" });
    assert.equal(d.verdict, "allow");
    assert.equal(lines(core.dir).length, before, "not written yet");
    core.beforeExecute();
    assert.ok(events(core.dir).some((e) => e.phase === "governance" && e.payload.step_id === d.step_id));
    await core.record("b1", { status: "ok" });
    assert.ok(!events(core.dir).some((e) => e.phase === "act"), "the act event waits");
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(events(core.dir).some((e) => e.phase === "act"), "written on the next turn");
    await core.finish();
    valid(core.dir);
  });

  test("a driver killed after appending its calls' events, before writing the state: the next one recovers them", async () => {
    const core = await EpisodeCore.open("Crash", { root, using: "claude-code", policies: [policy] });
    await core.propose({ kind: "tool", tool: "Bash", input: { command: "pwd" }, call_id: "c1" });
    await core.record("c1", { status: "ok" });
    core.close();
    const killed = await driver(core.episodeId, ["c2", "c3", "c4"], { NOEMA_TEST_DIE_AFTER: "2" });
    assert.equal(killed.signal, "SIGKILL", killed.err);
    assert.equal(json(core.dir, "state.json").plan.steps.length, 1, "the state did not see the killed driver's calls");
    const back = await EpisodeCore.attach(core.episodeId, { root, waitMs: 10_000 });
    const next = await back.propose({ kind: "tool", tool: "Bash", input: { command: "ls" }, call_id: "c5" });
    assert.equal(next.step_id, "step-4", "a new step id after the recovered ones");
    await back.record("c5", { status: "ok" });
    await back.finish();
    valid(core.dir);
    const state = json(core.dir, "state.json");
    assert.deepEqual(state.plan.steps.map((s: any) => [s.id, s.status]), [
      ["step-1", "done"],
      ["step-2", "done"],
      ["step-3", "done"],
      ["step-4", "done"],
    ]);
    assert.equal(state.outcomes.actions.length, 4);
    const plan = reconstructPlan(events(core.dir));
    assert.deepEqual(plan?.steps.map((s) => s.id), ["step-1", "step-2", "step-3", "step-4"]);
    // Each step plans its call's tool (the recovered ones too), which its action records: all planned tools used.
    assert.deepEqual(state.plan.steps.map((s: any) => s.inputs?.tool), ["Bash", "Bash", "Bash", "Bash"]);
    assert.equal(json(core.dir, "summary.json").insight.metrics.tool_coverage, 1);
  });

  test("concurrent processes proposing and recording leave a valid log with every call", async () => {
    const core = await EpisodeCore.open("Many hooks", { root, using: "claude-code", policies: [policy] });
    core.close();
    const n = 4, per = 3;
    const runs = await Promise.all(
      Array.from({ length: n }, (_, k) => driver(core.episodeId, Array.from({ length: per }, (_, j) => `k${k}_${j}`))),
    );
    for (const r of runs) assert.equal(r.code, 0, r.err);
    assert.ok(lines(core.dir).at(-1) === "", "the log ends with a whole line");
    const back = await EpisodeCore.attach(core.episodeId, { root });
    await back.finish();
    valid(core.dir);
    const ev = events(core.dir);
    const acts = ev.filter((e) => e.phase === "act");
    assert.equal(acts.length, n * per, "every call has its act event");
    const state = json(core.dir, "state.json");
    assert.equal(state.plan.steps.length, n * per);
    assert.ok(state.plan.steps.every((s: any) => s.status === "done"));
    const stdout = new Set(acts.map((a) => a.payload.output.stdout));
    assert.equal(stdout.size, n * per);
    for (let i = 1; i < ev.length; i++) assert.ok(ev[i].timestamp >= ev[i - 1].timestamp, "timestamps in order");
  });
});

describe("an intervention's patch", () => {
  test("a key named __proto__ or constructor is a key like any other: what the adapter reads is what is recorded", () => {
    const patch = JSON.parse('{"__proto__": {"command": "touch pwned"}, "argv": null}') as Record<string, unknown>;
    const { input, diff } = applyPatch({ argv: ["echo", "hi"] }, patch);
    assert.equal(Object.getPrototypeOf(input), Object.prototype, "the input's prototype is untouched");
    assert.equal(input.command, undefined, "no command comes from a prototype");
    assert.equal(JSON.stringify(input), '{"__proto__":{"command":"touch pwned"}}', "the record shows the key");
    assert.deepEqual(diff.map((d) => d.key), ["__proto__", "argv"]);
    assert.deepEqual(
      applyPatch({ a: 1 }, { constructor: null, toString: null }).diff,
      [],
      "no key removed that was not there",
    );
  });
});
