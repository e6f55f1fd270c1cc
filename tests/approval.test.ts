// deno-lint-ignore-file no-explicit-any -- tests read artifacts as loose JSON
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type AdapterPlugin,
  approve,
  EXIT,
  listEpisodes,
  pendingCheckpoint,
  reject,
  resume,
  run,
  type RunOptions,
  validate,
} from "noema";
import { tempDir } from "./helpers/tmp.ts";
import { cli, REPO, runtimeCommand } from "./helpers/cli.ts";
import { spawn } from "node:child_process";
import process from "node:process";
import { Buffer } from "node:buffer";
import { osUserName } from "../src/runtime/os_user.ts";
import { checkpointDigest } from "../src/store/checkpoint_digest.ts";

const tmp = tempDir();
after(() => tmp.cleanup());
const root = join(tmp.path, "root");

type Ev = { id: string; phase: string; event_type?: string; timestamp: string; payload: Record<string, any> };
const events = (dir: string): Ev[] =>
  readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
const json = (dir: string, name: string) => JSON.parse(readFileSync(join(dir, name), "utf8"));
const valid = (dir: string) => assert.deepEqual(validate(dir).problems, [], `${dir} must validate`);

const calls: string[] = [];
const recording: AdapterPlugin = {
  name: "recording",
  create: () => ({
    act: (
      req,
    ) => (calls.push(`${req.step.id}:${JSON.stringify(req.action.input)}`),
      { status: "ok", outcome: `did ${req.step.id}` }),
  }),
};
const reviewPlan: RunOptions["steps"] = [
  "detect:look",
  { kind: "review", description: "a human checks the change", inputs: { change: "rename" } },
  { kind: "act", description: "apply", inputs: { command: "apply" } },
];

async function pausedRun(extra: RunOptions = {}) {
  const r = await run("change with review", { root, using: recording, steps: reviewPlan, ...extra });
  assert.equal(r.status, "pending");
  assert.equal(r.exit_code, EXIT.PAUSED);
  return r;
}

describe("pause", () => {
  test("a review step pauses before the action: interrupt, checkpoint, non-terminal state, exit 4", async () => {
    const r = await pausedRun();
    const ev = events(r.episode_dir);
    assert.deepEqual(ev.slice(-3).map((e) => e.event_type), [
      "run.interrupt",
      "run.state_projection",
      "run.checkpoint",
    ]);
    const cp = ev.at(-1)!.payload;
    assert.equal(cp.status, "paused");
    assert.equal(cp.checkpoint_id, r.checkpoint_id);
    const checkpoint = json(r.episode_dir, `checkpoints/${r.checkpoint_id}.json`);
    assert.equal(checkpoint.event_offset, ev.length - 1);
    assert.equal(checkpoint.last_event_id, ev.at(-2)!.id);
    assert.equal(checkpoint.pending.step_id, "step-2");
    assert.equal(checkpoint.pending.kind, "review");
    assert.equal(checkpoint.adapter_label, "recording");
    const state = json(r.episode_dir, "state.json");
    assert.equal(state.outcomes.status, "pending");
    assert.deepEqual(Object.keys(state.links).sort(), ["events", "learn"]);
    assert.ok(!existsSync(join(r.episode_dir, "summary.json")) && !existsSync(join(r.episode_dir, "manifest.json")));
    assert.ok(!existsSync(join(r.episode_dir, "lock")), "the lock is released");
    valid(r.episode_dir);
    const listed = listEpisodes({ root, limit: 50 }).find((e) => e.episode_id === r.episode_id)!;
    assert.equal(listed.status, "pending");
    assert.equal(listed.lifecycle, "non-terminal");
    assert.deepEqual(listed.pending, {
      checkpoint_id: r.checkpoint_id,
      kind: "review",
      step_id: "step-2",
      reason: "review step step-2: a human checks the change",
    });
    assert.equal(
      pendingCheckpoint(r.episode_id, { root }).checkpoint.pending.reason,
      "review step step-2: a human checks the change",
    );
  });

  test("an approval-gate verdict pauses a risky command; approve and resume runs it", async () => {
    calls.length = 0;
    const gate = (await import("../plugins/policies/approval-gate.ts")).default;
    const r = await run("deploy", {
      root,
      using: recording,
      policies: [gate],
      steps: [{ kind: "act", description: "ship", inputs: { command: "deploy prod" } }],
    });
    assert.equal(r.status, "pending");
    assert.equal(r.pending?.kind, "approval");
    assert.equal(r.pending?.policy_id, "ApprovalGate@1.0");
    assert.deepEqual(calls, [], "the action did not run");
    const checkpointEvent = events(r.episode_dir).at(-1)!;
    assert.deepEqual(
      checkpointEvent.payload.pending.action.input,
      { command: "deploy prod" },
      "the checkpoint event shows the pending action",
    );
    approve(r.episode_id, { root, by: "ana" });
    const done = await resume(r.episode_id, { root, using: recording, policies: [gate] });
    assert.equal(done.status, "ok");
    assert.deepEqual(calls, ['step-1:{"command":"deploy prod"}']);
    valid(r.episode_dir);
  });

  test("a veto beside an approval request is refused without asking: an approval cannot undo another policy's veto", async () => {
    // Found by a newcomer run: a deny rule (or any plain veto) and ApprovalGate on the same action paused the run for
    // approval, and approving it ran the action the veto had blocked.
    const gate = (await import("../plugins/policies/approval-gate.ts")).default;
    const noDeploy = {
      name: "NoDeploy",
      version: "1",
      advise: () => ({ kind: "veto" as const, advice: "no deploys" }),
    };
    const broken = {
      name: "Broken",
      version: "1",
      advise: () => {
        throw new Error("cannot tell");
      },
    };
    for (const policies of [[gate, noDeploy], [noDeploy, gate], [gate, broken]]) {
      calls.length = 0;
      const r = await run("deploy", {
        root,
        using: recording,
        policies,
        steps: [{ kind: "act", description: "ship", inputs: { command: "deploy prod" } }],
      });
      const names = policies.map((p) => p.name).join(", ");
      assert.equal(r.status, "vetoed", `${names}: ${r.status}`);
      assert.equal(r.exit_code, EXIT.VETOED);
      assert.equal(r.pending ?? null, null, `${names}: nothing to approve`);
      assert.deepEqual(calls, [], `${names}: the action did not run`);
      const gov = events(r.episode_dir).find((e) => e.phase === "governance")!;
      assert.equal(gov.payload.decision, "veto");
      assert.match(
        gov.payload.rule,
        policies.includes(broken) ? /^policy\.failure:Broken@1/ : /^policy\.veto:NoDeploy@1/,
      );
      valid(r.episode_dir);
    }
    // The gate alone, or beside a veto that only watches: the run waits for approval, as before.
    const watching = {
      ...noDeploy,
      name: "Watching",
      advise: () => ({ kind: "veto" as const, advice: "hm", audit: true }),
    };
    const r = await run("deploy", {
      root,
      using: recording,
      policies: [watching, gate],
      steps: [{ kind: "act", description: "ship", inputs: { command: "deploy prod" } }],
    });
    assert.equal(r.status, "pending");
    assert.equal(r.pending?.policy_id, "ApprovalGate@1.0");
  });

  test("pause_on_veto pauses an enforced veto instead of ending the run", async () => {
    const noDrop = { name: "NoDrop", version: "1", advise: () => ({ kind: "veto" as const, advice: "no" }) };
    const r = await run("drop", {
      root,
      using: recording,
      policies: [noDrop],
      pause_on_veto: true,
      steps: ["act:drop it"],
    });
    assert.equal(r.status, "pending");
    assert.equal(r.pending?.kind, "veto");
    reject(r.episode_id, { root, note: "no" });
    const done = await resume(r.episode_id, { root, policies: [noDrop] });
    assert.equal(done.status, "vetoed");
    assert.equal(done.exit_code, EXIT.VETOED);
    valid(r.episode_dir);
  });
});

describe("decide and continue", () => {
  test("pause → approve → resume: the approved action runs, terminal artifacts validate, started_at is stable", async () => {
    calls.length = 0;
    const r = await pausedRun();
    const before = events(r.episode_dir);
    const startLine = readFileSync(join(r.episode_dir, "events.jsonl"), "utf8").split("\n")[0];
    await new Promise((res) => setTimeout(res, 400));
    const record = approve(r.episode_id, { root, by: "ana", note: "looks right" });
    assert.equal(record.decision, "approved");
    assert.equal(record.state_hash, json(r.episode_dir, `checkpoints/${r.checkpoint_id}.json`).state_hash);
    const done = await resume(r.episode_id, { root, using: recording });
    assert.equal(done.status, "ok");
    assert.equal(done.exit_code, 0);
    assert.deepEqual(calls, ["step-1:{}", 'step-2:{"change":"rename"}', 'step-3:{"command":"apply"}']);
    valid(r.episode_dir);
    const after = events(r.episode_dir);
    assert.equal(
      readFileSync(join(r.episode_dir, "events.jsonl"), "utf8").split("\n")[0],
      startLine,
      "the start event is unchanged",
    );
    assert.deepEqual(
      after.slice(0, before.length).map((e) => e.id),
      before.map((e) => e.id),
      "nothing written before is changed",
    );
    const resumeEvent = after.find((e) => e.event_type === "run.resume")!;
    assert.equal(resumeEvent.payload.checkpoint_id, r.checkpoint_id);
    // The OS user decided (authenticated as such); "ana" is the name it gave.
    assert.equal(resumeEvent.payload.approval.by, osUserName());
    assert.equal(resumeEvent.payload.approval.claimed_by, "ana");
    assert.equal(resumeEvent.payload.approval.authenticated_as, "os_user");
    const plan = after.filter((e) => e.phase === "plan").at(-1)!;
    assert.equal(plan.payload.source, "planner:resume");
    const act = after.filter((e) => e.phase === "act").find((e) => e.payload.step_id === "step-2")!;
    assert.equal(act.payload.provenance.approval.decision, "approved");
    const state = json(r.episode_dir, "state.json");
    assert.equal(state.episode.started_at, before[0].timestamp);
    assert.deepEqual(state.plan.steps.map((s: any) => s.status), ["done", "done", "done"]);
    const summary = json(r.episode_dir, "summary.json");
    assert.equal(summary.started_at, before[0].timestamp);
    assert.ok(summary.metrics.latencies.waiting_ms >= 25, "time spent waiting is reported");
    assert.equal(summary.adapter_result, "success");
    assert.equal(summary.metrics.act_count, 3, "acts before and after the pause are counted");
    // The total duration runs from start to end, waiting included; working and waiting time are kept apart.
    const lat = summary.metrics.latencies;
    assert.ok(lat.waiting_ms >= 400, `waited ${lat.waiting_ms} ms`);
    assert.ok(lat.total_ms >= lat.waiting_ms, "the total includes the wait");
    assert.ok(Math.abs(lat.total_ms - (lat.working_ms + lat.waiting_ms)) <= 2, "total = working + waiting");
    assert.equal(summary.duration_sec, Math.round(lat.total_ms) / 1000);
    const endMs = Date.parse(after.filter((e) => e.phase === "terminate")[0].timestamp);
    assert.ok(lat.total_ms >= endMs - Date.parse(before[0].timestamp) - 1, "start to end");
    assert.equal(json(r.episode_dir, `approvals/${r.checkpoint_id}.json`).consumed_by, resumeEvent.id);
  });

  test("pause → reject → resume: the step is vetoed, no act for it, exit 3", async () => {
    calls.length = 0;
    const r = await pausedRun();
    reject(r.episode_id, { root, by: "bo", note: "not now" });
    const done = await resume(r.episode_id, { root });
    assert.equal(done.status, "vetoed");
    assert.equal(done.exit_code, EXIT.VETOED);
    assert.deepEqual(calls, ["step-1:{}"]);
    assert.ok(!events(r.episode_dir).some((e) => e.phase === "act" && e.payload.step_id === "step-2"));
    assert.deepEqual(json(r.episode_dir, "state.json").plan.steps.map((s: any) => s.status), [
      "done",
      "vetoed",
      "pending",
    ]);
    assert.match(
      events(r.episode_dir).find((e) => e.phase === "terminate")!.payload.message,
      /Rejected by \S+ \(claimed: bo\): not now/,
    );
    valid(r.episode_dir);
  });

  test("several pauses in one run; started_at stays the same through all of them", async () => {
    const steps: RunOptions["steps"] = ["review:first look", "act:work", "review:second look", "act:finish"];
    const r = await run("two reviews", { root, using: recording, steps });
    approve(r.episode_id, { root });
    const second = await resume(r.episode_id, { root, using: recording });
    assert.equal(second.status, "pending");
    assert.equal(second.pending?.step_id, "step-3");
    approve(r.episode_id, { root });
    const done = await resume(r.episode_id, { root, using: recording });
    assert.equal(done.status, "ok");
    valid(r.episode_dir);
    assert.equal(events(r.episode_dir).filter((e) => e.phase === "start").length, 1);
    assert.equal(json(r.episode_dir, "state.json").episode.started_at, events(r.episode_dir)[0].timestamp);
  });

  test("resume --abort ends a paused run as aborted with terminal artifacts", async () => {
    const r = await pausedRun();
    const done = await resume(r.episode_id, { root, abort: true });
    assert.equal(done.status, "aborted");
    assert.equal(json(r.episode_dir, "summary.json").adapter_result, "skipped");
    valid(r.episode_dir);
  });
});

describe("fail closed", () => {
  const code = (n: number) => (e: unknown) => (e as { exitCode?: number }).exitCode === n;

  test("a terminal run cannot be resumed or decided (5)", async () => {
    const r = await run("done", { root });
    await assert.rejects(resume(r.episode_id, { root }), code(EXIT.SEALED));
    assert.throws(() => approve(r.episode_id, { root }), code(EXIT.SEALED));
  });

  test("no decision yet (6); deciding twice (8); a consumed decision (8)", async () => {
    const r = await pausedRun();
    await assert.rejects(resume(r.episode_id, { root }), code(EXIT.NO_CHECKPOINT));
    approve(r.episode_id, { root });
    assert.throws(() => reject(r.episode_id, { root }), code(EXIT.CONSUMED));
    const path = join(r.episode_dir, "approvals", `${r.checkpoint_id}.json`);
    const record = JSON.parse(readFileSync(path, "utf8"));
    writeFileSync(path, JSON.stringify({ ...record, consumed_at: "2026-01-01T00:00:00.000Z", consumed_by: "ev_x" }));
    const before = readFileSync(join(r.episode_dir, "events.jsonl"));
    await assert.rejects(resume(r.episode_id, { root }), code(EXIT.CONSUMED));
    assert.deepEqual(readFileSync(join(r.episode_dir, "events.jsonl")), before, "nothing is written");
  });

  test("a missing checkpoint file (6); a run that is not paused (6)", async () => {
    const r = await pausedRun();
    approve(r.episode_id, { root });
    const { rmSync } = await import("node:fs");
    rmSync(join(r.episode_dir, "checkpoints", `${r.checkpoint_id}.json`));
    await assert.rejects(resume(r.episode_id, { root }), code(EXIT.NO_CHECKPOINT));
  });

  test("state.json or events.jsonl changed since the checkpoint (7)", async () => {
    const a = await pausedRun();
    approve(a.episode_id, { root });
    const state = json(a.episode_dir, "state.json");
    writeFileSync(
      join(a.episode_dir, "state.json"),
      JSON.stringify({ ...state, goal: { task: "something else" } }, null, 2) + "\n",
    );
    await assert.rejects(resume(a.episode_id, { root }), code(EXIT.MISMATCH));
    const b = await pausedRun();
    approve(b.episode_id, { root });
    const last = events(b.episode_dir).at(-1)!;
    appendFileSync(join(b.episode_dir, "events.jsonl"), JSON.stringify({ ...last, id: "ev_extra" }) + "\n");
    await assert.rejects(
      resume(b.episode_id, { root }),
      (e: any) => e.exitCode === EXIT.MISMATCH || e.exitCode === EXIT.NO_CHECKPOINT,
    );
  });

  test("a decision other than exactly approved or rejected runs nothing (7), read neither as approval nor rejection", async () => {
    for (const decision of ["Rejected", "approve", "", null]) {
      const r = await pausedRun();
      reject(r.episode_id, { root });
      const path = join(r.episode_dir, "approvals", `${r.checkpoint_id}.json`);
      writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), decision }));
      const before = calls.length;
      const log = readFileSync(join(r.episode_dir, "events.jsonl"));
      await assert.rejects(resume(r.episode_id, { root, using: recording }), code(EXIT.MISMATCH), String(decision));
      assert.equal(calls.length, before, `${JSON.stringify(decision)}: the pending action did not run`);
      assert.deepEqual(readFileSync(join(r.episode_dir, "events.jsonl")), log, "nothing is written");
    }
  });

  test("a decision asked for one checkpoint is not taken on another (7): the run moved on since the decider looked", async () => {
    const r = await pausedRun();
    assert.throws(
      () => approve(r.episode_id, { root, checkpointId: "chk_000000000000" }),
      (e: any) => e.exitCode === EXIT.MISMATCH && /now waits on chk_[0-9a-f]+, not on chk_000000000000/.test(e.message),
    );
    assert.equal(existsSync(join(r.episode_dir, "approvals")), false, "nothing decided");
    assert.equal(approve(r.episode_id, { root, checkpointId: r.checkpoint_id! }).decision, "approved");
  });

  test("noema approve|reject --checkpoint: only the checkpoint the decider saw (7 on another, nothing recorded)", async () => {
    const r = await pausedRun();
    const env = { NOEMA_ROOT: root };
    for (const verb of ["approve", "reject"]) {
      const wrong = cli([verb, r.episode_id, "--checkpoint", "chk_000000000000"], { env });
      assert.equal(wrong.code, EXIT.MISMATCH, wrong.stderr);
      assert.match(wrong.stderr, /now waits on chk_[0-9a-f]+, not on chk_000000000000/);
    }
    assert.equal(existsSync(join(r.episode_dir, "approvals")), false, "nothing decided");
    const right = cli(["approve", r.episode_id, "--checkpoint", r.checkpoint_id!, "--json"], { env });
    assert.equal(right.code, 0, right.stderr);
    assert.equal(JSON.parse(right.stdout).checkpoint_id, r.checkpoint_id);
  });

  test("the pending action swapped after the decision (7): the decision is bound to the checkpoint's digest", async () => {
    const r = await pausedRun();
    const record = approve(r.episode_id, { root });
    assert.match(String(record.checkpoint_digest), /^sha256:[0-9a-f]{64}$/);
    const cpPath = join(r.episode_dir, "checkpoints", `${r.checkpoint_id}.json`);
    const cp = JSON.parse(readFileSync(cpPath, "utf8"));
    cp.pending.action.input.command = "echo PWNED";
    writeFileSync(cpPath, JSON.stringify(cp, null, 2));
    // The run.checkpoint event (the log's last line) edited alike: the file is the one the log announces.
    const logPath = join(r.episode_dir, "events.jsonl");
    const lines = readFileSync(logPath, "utf8").trimEnd().split("\n");
    const last = JSON.parse(lines.at(-1)!);
    last.payload.pending.action.input.command = "echo PWNED";
    writeFileSync(logPath, [...lines.slice(0, -1), JSON.stringify(last)].join("\n") + "\n");
    const before = calls.length;
    await assert.rejects(
      resume(r.episode_id, { root, using: recording }),
      (e: any) => e.exitCode === EXIT.MISMATCH && /changed since it was decided on/.test(e.message),
    );
    assert.equal(calls.length, before, "the swapped action did not run");
    // A record without the binding (an older noema's) is refused too: nothing ties it to the action.
    const apPath = join(r.episode_dir, "approvals", `${r.checkpoint_id}.json`);
    const { checkpoint_digest: _, ...unbound } = JSON.parse(readFileSync(apPath, "utf8"));
    writeFileSync(apPath, JSON.stringify(unbound));
    await assert.rejects(
      resume(r.episode_id, { root, using: recording }),
      (e: any) => e.exitCode === EXIT.MISMATCH && /no checkpoint_digest/.test(e.message),
    );
    assert.equal(calls.length, before);
  });

  test("the checkpoint file edited while the run waits (7): it must be the checkpoint its run.checkpoint event announced", async () => {
    // Found by an audit: `noema view` showed the event's pending action, resume ran the file's: a human approved
    // "apply" and "echo PWNED" ran. The approval's checkpoint_digest was computed from the already edited file.
    const r = await pausedRun();
    const cpPath = join(r.episode_dir, "checkpoints", `${r.checkpoint_id}.json`);
    const cp = JSON.parse(readFileSync(cpPath, "utf8"));
    cp.pending.action.input.command = "echo PWNED";
    writeFileSync(cpPath, JSON.stringify(cp, null, 2));
    const announced = /not the checkpoint its run\.checkpoint event announced \(its pending action differs\)/;
    assert.throws(
      () => approve(r.episode_id, { root }),
      (e: any) => e.exitCode === EXIT.MISMATCH && announced.test(e.message),
    );
    assert.equal(existsSync(join(r.episode_dir, "approvals", `${r.checkpoint_id}.json`)), false, "no decision on it");
    // A decision bound to the edited file (its digest re-computed by whoever edited it) runs nothing either.
    mkdirSync(join(r.episode_dir, "approvals"), { recursive: true });
    writeFileSync(
      join(r.episode_dir, "approvals", `${r.checkpoint_id}.json`),
      JSON.stringify({
        schema_version: "approval/1.0",
        episode_id: r.episode_id,
        checkpoint_id: r.checkpoint_id,
        state_hash: cp.state_hash,
        checkpoint_digest: checkpointDigest(cp),
        decision: "approved",
        by: osUserName(),
        at: new Date().toISOString(),
        note: null,
        consumed_at: null,
        consumed_by: null,
        authenticated_as: "os_user",
        database_role: null,
        claimed_by: null,
      }),
    );
    const log = readFileSync(join(r.episode_dir, "events.jsonl"));
    const before = calls.length;
    await assert.rejects(
      resume(r.episode_id, { root, using: recording }),
      (e: any) => e.exitCode === EXIT.MISMATCH && announced.test(e.message),
    );
    assert.equal(calls.length, before, "the edited action did not run");
    assert.deepEqual(readFileSync(join(r.episode_dir, "events.jsonl")), log, "nothing is written");
  });

  test("an event before the checkpoint rewritten, count and last id kept (7): the checkpoint holds the log's digest", async () => {
    const r = await pausedRun();
    approve(r.episode_id, { root });
    const checkpoint = json(r.episode_dir, `checkpoints/${r.checkpoint_id}.json`);
    const logPath = join(r.episode_dir, "events.jsonl");
    const lines = readFileSync(logPath, "utf8").split("\n");
    assert.equal(checkpoint.events_bytes, Buffer.byteLength(lines.slice(0, -2).join("\n") + "\n"));
    const second = JSON.parse(lines[1]);
    lines[1] = JSON.stringify({ ...second, payload: { ...second.payload, rewritten: true } });
    writeFileSync(logPath, lines.join("\n"));
    const before = calls.length;
    await assert.rejects(
      resume(r.episode_id, { root, using: recording }),
      (e: any) => e.exitCode === EXIT.MISMATCH && /changed before checkpoint/.test(e.message),
    );
    assert.equal(calls.length, before, "nothing ran");
  });

  test("a different adapter than the paused one (9)", async () => {
    const r = await pausedRun();
    approve(r.episode_id, { root });
    await assert.rejects(resume(r.episode_id, { root, using: "minimal" }), code(EXIT.PLUGIN_MISMATCH));
    const other: AdapterPlugin = { name: "other", create: () => ({ act: () => ({ status: "ok" }) }) };
    await assert.rejects(resume(r.episode_id, { root, using: other }), code(EXIT.PLUGIN_MISMATCH));
    assert.ok(!existsSync(join(r.episode_dir, "summary.json")));
  });

  test("two concurrent resumes: one runs, the other is refused by the lock (10)", async () => {
    let release!: () => void;
    const gate = new Promise<void>((res) => (release = res));
    const slow: AdapterPlugin = { name: "slow", create: () => ({ act: async () => (await gate, { status: "ok" }) }) };
    const r = await run("slow review", { root, using: slow, steps: ["review:check", "act:work"] });
    approve(r.episode_id, { root });
    const first = resume(r.episode_id, { root, using: slow });
    await new Promise((res) => setTimeout(res, 20));
    await assert.rejects(resume(r.episode_id, { root, using: slow }), code(EXIT.LOCKED));
    release();
    assert.equal((await first).status, "ok");
    valid(r.episode_dir);
    assert.deepEqual(readdirSync(r.episode_dir).filter((n) => n === "lock"), []);
  });

  test("a decider that arrives after the resume moved past the checkpoint lost to the decision: 8, not 6 or 7", async () => {
    let release!: () => void;
    const gate = new Promise<void>((res) => (release = res));
    const slow: AdapterPlugin = { name: "slow", create: () => ({ act: async () => (await gate, { status: "ok" }) }) };
    const r = await run("late decider", { root, using: slow, steps: ["review:check", "act:work"] });
    approve(r.episode_id, { root, by: "first" });
    const resumed = resume(r.episode_id, { root, using: slow });
    // The resume has appended past the checkpoint (a generous wait for the condition, not a fixed sleep).
    for (let i = 0; i < 2000 && events(r.episode_dir).at(-1)?.event_type === "run.checkpoint"; i++) {
      await new Promise((res) => setTimeout(res, 10));
    }
    const late = (e: unknown) =>
      code(EXIT.CONSUMED)(e) && /was already approved by \S+ \(claimed: first\) at /.test(String(e));
    assert.throws(() => reject(r.episode_id, { root }), late);
    assert.throws(() => approve(r.episode_id, { root }), late);
    release();
    assert.equal((await resumed).status, "ok");
    valid(r.episode_dir);
    // state.json rewritten after the decision (the window before the resume's first event): 8 as well.
    const p = await run("late decider 2", { root, using: slow, steps: ["review:check"] });
    approve(p.episode_id, { root, by: "first" });
    writeFileSync(join(p.episode_dir, "state.json"), readFileSync(join(p.episode_dir, "state.json"), "utf8") + " ");
    assert.throws(() => reject(p.episode_id, { root }), late);
  });

  test("racing deciders (child processes, real CLI code): one decides, every loser exits 8 (issue 24.14)", {
    timeout: 180_000,
  }, async () => {
    // Each child loads the CLI, says it is ready, and waits for the start time the test then writes (sleeping, then
    // spinning only its last few ms), so all decide at once however slowly they loaded: the losers race the winner's
    // exclusive create, and one that lost at the link (EEXIST) must say "already decided" (8), not "internal
    // error" (1).
    const racer = join(tmp.path, "racer.ts");
    writeFileSync(
      racer,
      `import { existsSync, readFileSync, writeFileSync } from "node:fs";\n` +
        `import { main } from ${JSON.stringify(join(REPO, "src", "cli", "main.ts"))};\n` +
        // main() guards process.exit against plugins (exit_guard.ts): noema's own exit goes through exitProcess.
        `import { exitProcess } from ${JSON.stringify(join(REPO, "src", "plugins", "exit_guard.ts"))};\n` +
        `const [dir, i, ...args] = process.argv.slice(2);\n` +
        `const sleep = (ms) => new Promise((r) => setTimeout(r, ms));\n` +
        `writeFileSync(dir + "/ready-" + i, "");\n` +
        `while (!existsSync(dir + "/go")) await sleep(10);\n` +
        `const at = Number(readFileSync(dir + "/go", "utf8"));\n` +
        `await sleep(Math.max(0, at - Date.now() - 20));\n` +
        `while (Date.now() < at) { /* the last ms: all racers go at once */ }\n` +
        `exitProcess(await main(args));\n`,
    );
    const command = [...runtimeCommand(), racer];
    const RACERS = 10;
    for (let round = 0; round < 3; round++) {
      const r = await pausedRun();
      const sync = join(tmp.path, `race-${round}`);
      mkdirSync(sync);
      const runs = Array.from(
        { length: RACERS },
        (_, i) =>
          new Promise<{ code: number | null; stderr: string }>((done) => {
            const child = spawn(command[0], [
              ...command.slice(1),
              sync,
              String(i),
              "--root",
              root,
              i % 2 === 0 ? "approve" : "reject",
              r.episode_id,
              "--by",
              `racer-${i}`,
            ], { env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "ignore", "pipe"] });
            let stderr = "";
            child.stderr!.on("data", (d) => (stderr += d));
            child.on("close", (code) => done({ code, stderr }));
          }),
      );
      // Every racer has loaded (a generous wait for the condition, not a fixed sleep): then the start time.
      for (let waited = 0; readdirSync(sync).length < RACERS && waited < 120_000; waited += 20) {
        await new Promise((res) => setTimeout(res, 20));
      }
      writeFileSync(join(sync, "go"), String(Date.now() + 200));
      const results = await Promise.all(runs);
      const codes = results.map((x) => x.code);
      assert.equal(codes.filter((c) => c === 0).length, 1, `one winner: ${JSON.stringify(results)}`);
      for (const x of results.filter((x) => x.code !== 0)) {
        assert.equal(x.code, EXIT.CONSUMED, x.stderr);
        assert.match(x.stderr, /was already (approved|rejected) by \S+ \(claimed: racer-\d+\) at /);
      }
      assert.deepEqual(readdirSync(join(r.episode_dir, "approvals")), [`${r.checkpoint_id}.json`]);
    }
  });

  test("a checkpoint id in the event log can never lead outside the episode", async () => {
    const r = await pausedRun();
    const path = join(r.episode_dir, "events.jsonl");
    const lines = readFileSync(path, "utf8").trim().split("\n");
    for (const evil of ["../../../../tmp/evil", "chk_../../x", "/etc/passwd", "chk_a\u0000b"]) {
      const last = JSON.parse(lines.at(-1)!);
      last.payload.checkpoint_id = evil;
      writeFileSync(path, [...lines.slice(0, -1), JSON.stringify(last)].join("\n") + "\n");
      assert.throws(
        () => approve(r.episode_id, { root }),
        (e: any) => e.exitCode === EXIT.MISMATCH && /invalid checkpoint id/.test(e.message),
      );
      await assert.rejects(resume(r.episode_id, { root }), (e: any) => e.exitCode === EXIT.MISMATCH);
    }
    assert.deepEqual(
      readdirSync(r.episode_dir).filter((n) => n === "approvals"),
      [],
      "no approval was written anywhere",
    );
  });

  test("a masked secret in the pending action is restored from the environment on resume, or the resume stops", async () => {
    const env = (await import("node:process")).default.env;
    env.NOEMA_APPROVAL_SECRET = "tok-0123456789abcdef";
    calls.length = 0;
    const r = await run("deploy with a token", {
      root,
      using: recording,
      secrets: ["NOEMA_APPROVAL_SECRET"],
      steps: [{ kind: "review", description: "check", inputs: { command: "deploy --token tok-0123456789abcdef" } }],
    });
    assert.match(
      readFileSync(join(r.episode_dir, `checkpoints/${r.checkpoint_id}.json`), "utf8"),
      /\[REDACTED:NOEMA_APPROVAL_SECRET\]/,
    );
    approve(r.episode_id, { root });
    delete env.NOEMA_APPROVAL_SECRET;
    await assert.rejects(
      resume(r.episode_id, { root, using: recording }),
      (e: any) => e.exitCode === EXIT.USAGE && /set NOEMA_APPROVAL_SECRET/.test(e.message),
    );
    env.NOEMA_APPROVAL_SECRET = "tok-0123456789abcdef";
    const done = await resume(r.episode_id, { root, using: recording });
    assert.equal(done.status, "ok");
    assert.deepEqual(calls, ['step-1:{"command":"deploy --token tok-0123456789abcdef"}']);
    for (const name of ["events.jsonl", "state.json", "summary.json"]) {
      assert.ok(
        !readFileSync(join(r.episode_dir, name), "utf8").includes("tok-0123456789abcdef"),
        `${name} must not hold the secret`,
      );
    }
    delete env.NOEMA_APPROVAL_SECRET;
  });
});
