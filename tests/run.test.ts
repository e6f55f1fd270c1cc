// deno-lint-ignore-file no-explicit-any -- tests read artifacts as loose JSON
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  type AdapterPlugin,
  DirectedIntuition,
  EXIT,
  type NoemaError,
  type PolicyState,
  readPolicySnapshot,
  reconstructPlan,
  run,
  type RunOptions,
  validate,
} from "noema";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir();
after(() => tmp.cleanup());
const root = join(tmp.path, "root");

type Ev = {
  phase: string;
  faculty?: string;
  event_type?: string;
  payload: Record<string, unknown>;
  timestamp: string;
  id: string;
  caused_by?: string;
};
function events(dir: string): Ev[] {
  return readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
}
function json(dir: string, name: string): Record<string, any> {
  return JSON.parse(readFileSync(join(dir, name), "utf8"));
}
async function runValid(task: string, options: RunOptions = {}) {
  const r = await run(task, { root, ...options });
  const report = validate(r.episode_dir);
  assert.deepEqual(report.problems, [], `episode ${r.episode_id} must validate`);
  return r;
}

const vetoDrop = {
  name: "NoDrop",
  version: "2.0",
  advise: (
    s: PolicyState,
  ) => (JSON.stringify(s.action.input).includes("DROP")
    ? { kind: "veto" as const, advice: "no DROP", confidence: 0.9 }
    : undefined),
};
const rewrite = {
  name: "Rewrite",
  version: "1.0",
  advise: (s: PolicyState) =>
    s.step.kind === "act"
      ? { kind: "intervention" as const, advice: "add LIMIT", patch: { sql: "SELECT 1 LIMIT 5" } }
      : undefined,
};
const sqlSteps = [{ kind: "act" as const, description: "query", inputs: { sql: "SELECT 1" } }];

describe("run: the minimal path", () => {
  test("default adapter, minimal planner, canonical event order, all artifacts valid", async () => {
    const r = await runValid("Say hello");
    assert.equal(r.status, "ok");
    assert.equal(r.outcome, "success_unverified");
    assert.equal(r.exit_code, 0);
    assert.match(r.episode_id, /^ep_[0-9A-HJKMNP-TV-Z]{26}$/);
    const all = events(r.episode_dir).map((e) => e.event_type ?? e.phase);
    // Between the plan's projection and the terminal one, a state is persisted (and projected) again only once 250 ms
    // have passed since the last: a loaded machine may add one after any step. The order is the same without them.
    const afterPlan = all.indexOf("run.state_projection");
    const phases = all.filter((p, i) => p !== "run.state_projection" || i === afterPlan || i === all.length - 1);
    assert.deepEqual(phases, [
      "start",
      "observe",
      "interpret",
      "plan",
      "run.state_projection",
      "action_candidate",
      "governance",
      "act",
      "action_candidate",
      "governance",
      "act",
      "action_candidate",
      "governance",
      "act",
      "reflect",
      "learn",
      "terminate",
      "insight",
      "run.state_projection",
    ]);
    const state = json(r.episode_dir, "state.json");
    assert.deepEqual(state.plan.steps.map((s: any) => [s.kind, s.status]), [["detect", "done"], ["act", "done"], [
      "verify",
      "done",
    ]]);
    assert.deepEqual(Object.keys(state.links).sort(), ["events", "learn", "manifest", "summary"]);
    assert.equal(state.episode.intuition_mode, "interventive");
    const summary = json(r.episode_dir, "summary.json");
    assert.equal(summary.metrics.act_count, 3);
    assert.equal(summary.metrics.plan_count, 1);
    assert.equal(summary.metrics.reflect_count, 1);
    assert.equal(summary.metrics.success, 1);
    assert.equal(summary.insight.metrics.plan_adherence, 1);
    const manifest = json(r.episode_dir, "manifest.json");
    assert.deepEqual(manifest.files.map((f: any) => f.name), [
      "events.jsonl",
      "learn.jsonl",
      "state.json",
      "summary.json",
    ]);
    assert.equal(manifest.plugins[0].id, "adapter:minimal");
  });

  test("minimal mode: no direction, governance or insight; policies are not consulted", async () => {
    let called = 0;
    const r = await runValid("quiet", { mode: "minimal", policies: [{ name: "Spy", advise: () => void called++ }] });
    const ev = events(r.episode_dir);
    assert.equal(
      ev.filter((e) => e.phase === "direction" || e.phase === "governance" || e.phase === "insight").length,
      0,
    );
    assert.equal(called, 0);
    const summary = json(r.episode_dir, "summary.json");
    assert.equal(summary.flags.mode, "minimal");
    assert.equal(summary.flags.direction, undefined);
    assert.equal(summary.insight, undefined);
  });

  test("every action timestamp equals its act event's, byte for byte; caused_by chains to earlier events", async () => {
    const r = await runValid("chain", { steps: ["detect:a", "act:b", "verify:c"] });
    const ev = events(r.episode_dir);
    const acts = ev.filter((e) => e.phase === "act");
    const actions = json(r.episode_dir, "state.json").outcomes.actions;
    assert.deepEqual(actions.map((a: any) => a.timestamp), acts.map((e) => e.timestamp));
    const ids = new Set<string>();
    for (const e of ev) {
      if (e.caused_by) assert.ok(ids.has(e.caused_by), `${e.phase} caused_by must name an earlier event`);
      assert.ok(!ids.has(e.id));
      ids.add(e.id);
    }
  });
});

describe("run: policies, intuition modes and governance", () => {
  for (const governance of ["enforce", "audit", "off"] as const) {
    for (const intuition_mode of ["advisory", "interventive", "hybrid"] as const) {
      test(`veto under governance=${governance}, intuition=${intuition_mode}`, async () => {
        const r = await runValid("drop it", {
          governance,
          intuition_mode,
          policies: [vetoDrop],
          steps: [{ kind: "act", description: "drop", inputs: { sql: "DROP TABLE t" } }],
        });
        const blocks = intuition_mode !== "advisory" && governance !== "audit";
        assert.equal(r.status, blocks ? "vetoed" : "ok");
        assert.equal(r.exit_code, blocks ? 3 : 0);
        const ev = events(r.episode_dir);
        const dir = ev.find((e) => e.phase === "direction")!;
        assert.equal(dir.faculty, "direction");
        assert.equal(dir.payload.policy, "NoDrop@2.0");
        assert.equal(dir.payload.kind, "veto");
        assert.equal(dir.payload.status, intuition_mode === "advisory" ? "skipped" : "applied");
        assert.equal(typeof dir.payload.advise_ms, "number");
        const gov = ev.filter((e) => e.phase === "governance");
        assert.equal(gov.length, governance === "off" ? 0 : 1);
        if (governance !== "off") {
          assert.equal(gov[0].faculty, "governance");
          assert.equal(gov[0].payload.decision, intuition_mode === "advisory" ? "allow" : "veto");
          assert.equal(gov[0].payload.enforced, governance === "enforce");
        }
        // A blocked step has one act event: the plan evidence (step_status vetoed, result_status skipped).
        const acts = ev.filter((e) => e.phase === "act");
        assert.equal(acts.length, 1);
        assert.deepEqual(
          [acts[0].payload.step_status, acts[0].payload.result_status],
          blocks ? ["vetoed", "skipped"] : ["done", "ok"],
        );
        const state = json(r.episode_dir, "state.json");
        assert.equal(state.plan.steps[0].status, blocks ? "vetoed" : "done");
        assert.deepEqual(reconstructPlan(ev)!.steps.map((x) => x.status), [state.plan.steps[0].status]);
        assert.equal(state.outcomes.actions.length, 1);
        assert.equal(state.outcomes.status, blocks ? "vetoed" : "ok");
        const summary = json(r.episode_dir, "summary.json");
        // veto_count: actions actually blocked; flags.direction.vetoed: veto verdicts applied by direction
        // (advisory skips them; audit applies them without enforcing: would_veto_count).
        assert.equal(summary.metrics.veto_count, blocks ? 1 : 0);
        assert.equal(summary.metrics.act_count, blocks ? 0 : 1, "a blocked action was not executed");
        assert.equal(
          summary.metrics.would_veto_count,
          governance === "audit" && intuition_mode !== "advisory" ? 1 : 0,
        );
        assert.equal(summary.flags.direction.failed, 0);
        assert.equal(summary.flags.direction.policy, intuition_mode === "advisory" ? undefined : "NoDrop@2.0");
        assert.equal(summary.adapter_result, blocks ? "skipped" : "success");
        assert.equal(summary.outcome, blocks ? "error" : "success_unverified");
        assert.equal(summary.flags.direction.vetoed, intuition_mode === "advisory" ? 0 : 1);
        assert.equal(ev.find((e) => e.phase === "terminate")!.payload.status, blocks ? "vetoed" : "ok");
      });
    }
  }

  for (const intuition_mode of ["advisory", "interventive", "hybrid"] as const) {
    test(`intervention under intuition=${intuition_mode}: applied only when interventive`, async () => {
      let seen: unknown;
      const adapter: AdapterPlugin = {
        name: "capture",
        create: () => ({ act: (req) => (seen = req.action.input, { status: "ok", outcome: "captured" }) }),
      };
      const r = await runValid("query", { intuition_mode, using: adapter, policies: [rewrite], steps: sqlSteps });
      const applied = intuition_mode === "interventive";
      assert.deepEqual(seen, { sql: applied ? "SELECT 1 LIMIT 5" : "SELECT 1" });
      const dir = events(r.episode_dir).find((e) => e.phase === "direction")!;
      assert.equal(dir.payload.status, applied ? "applied" : "skipped");
      assert.deepEqual(
        dir.payload.diff,
        applied ? [{ key: "sql", before: "SELECT 1", after: "SELECT 1 LIMIT 5" }] : [],
      );
      const summary = json(r.episode_dir, "summary.json");
      assert.deepEqual(summary.flags.direction.last_diff, applied ? ["sql"] : []);
      assert.equal(summary.flags.direction.applied, applied ? 1 : 0);
    });
  }

  test("verdicts below direction_min_confidence are recorded as skipped", async () => {
    const r = await runValid("drop", {
      direction_min_confidence: 0.95,
      policies: [vetoDrop],
      steps: [{ kind: "act", description: "d", inputs: { sql: "DROP TABLE t" } }],
    });
    assert.equal(r.status, "ok");
    const dir = events(r.episode_dir).find((e) => e.phase === "direction")!;
    assert.equal(dir.payload.status, "skipped");
    assert.equal(dir.payload.reason, "below_threshold");
  });

  test("a policy cannot mutate the state: the attempt throws and is handled by the failure policy", async () => {
    class Mutator extends DirectedIntuition {
      static override version = "1.0";
      advise(state: PolicyState) {
        (state as any).step.inputs.sql = "DROP TABLE x";
        return undefined;
      }
    }
    let seen: unknown;
    const adapter: AdapterPlugin = {
      name: "c",
      create: () => ({ act: (req) => (seen = req.action.input, { status: "ok" }) }),
    };
    const open = await runValid("mutate", {
      failure_policy: "fail_open",
      using: adapter,
      policies: [Mutator],
      steps: sqlSteps,
    });
    assert.deepEqual(seen, { sql: "SELECT 1" }, "the action input is unchanged");
    const ev = events(open.episode_dir);
    const dir = ev.find((e) => e.phase === "direction")!;
    assert.equal(dir.payload.status, "blocked");
    assert.equal((dir.payload.error as any).type, "StateMutation");
    assert.equal(ev.find((e) => e.phase === "governance")!.payload.decision, "audit");
    assert.equal(open.status, "ok");
    const closed = await runValid("mutate", {
      governance: "enforce",
      using: adapter,
      policies: [Mutator],
      steps: sqlSteps,
    });
    assert.equal(closed.status, "vetoed", "fail_closed (the enforce default) blocks on a policy failure");
  });

  test("the state given to advise is deeply frozen", async () => {
    let frozen: boolean[] = [];
    await runValid("freeze", {
      policies: [{
        name: "Probe",
        advise: (s: PolicyState) => {
          frozen = [
            Object.isFrozen(s),
            Object.isFrozen(s.step),
            Object.isFrozen(s.step.inputs),
            Object.isFrozen(s.action.input),
            Array.isArray(s.outcomes.actions) &&
            Object.isFrozen(s.outcomes.actions[0] ?? {}) === (s.outcomes.actions.length > 0),
            Object.isFrozen(s.memory),
            Object.isFrozen(s.plan.steps[0]),
          ];
        },
      }],
      steps: sqlSteps,
    });
    assert.deepEqual(frozen, [true, true, true, true, true, true, true]);
  });

  test("a policy that never resolves times out; one returning garbage is invalid; both are recorded", async () => {
    const r = await runValid("hang", {
      failure_policy: "fail_open",
      policy_timeout_ms: 50,
      policies: [
        { name: "Hang", advise: () => new Promise(() => {}) },
        { name: "Garbage", advise: () => ({ kind: "maybe" }) as never },
      ],
    });
    const dirs = events(r.episode_dir).filter((e) => e.phase === "direction").slice(0, 2);
    assert.deepEqual(dirs.map((d) => (d.payload.error as any)?.type), ["PolicyTimeout", "InvalidVerdict"]);
    assert.equal(r.status, "ok");
  });

  test("flags.direction names the policy whose verdict was applied, and counts policy failures apart", async () => {
    const quiet = { name: "Quiet", version: "1", advise: () => undefined };
    const hinter = { name: "Hinter", version: "1", advise: () => ({ kind: "hint" as const, advice: "careful" }) };
    const thrower = {
      name: "Thrower",
      version: "1",
      advise: () => {
        throw new Error("boom");
      },
    };
    const r = await runValid("flags", { policies: [quiet, hinter], steps: sqlSteps });
    const d = json(r.episode_dir, "summary.json").flags.direction;
    assert.equal(d.policy, "Hinter@1", "not the first loaded policy, which issued nothing");
    assert.equal(d.failed, 0);
    const f = await runValid("flags", { policies: [quiet, thrower], steps: sqlSteps, failure_policy: "fail_open" });
    const fd = json(f.episode_dir, "summary.json").flags.direction;
    assert.equal(fd.policy, undefined, "no verdict was applied");
    assert.equal(fd.failed, 1, "the failure is counted");
    assert.equal(fd.vetoed, 0, "a policy failure is not a veto");
    const closed = await run("flags", { root, policies: [thrower], steps: sqlSteps });
    const cd = json(closed.episode_dir, "summary.json");
    assert.equal(closed.status, "vetoed", "fail_closed blocks the action");
    assert.equal(cd.flags.direction.failed, 1);
    assert.equal(cd.flags.direction.vetoed, 0);
    assert.equal(cd.metrics.veto_count, 1, "veto_count counts blocked actions, whatever blocked them");
  });

  test("hints reach the adapter; each direction event names the policy, version and timing", async () => {
    let hints: readonly string[] = [];
    const adapter: AdapterPlugin = {
      name: "h",
      create: () => ({ act: (req) => (hints = req.hints, { status: "ok" }) }),
    };
    await runValid("hint", {
      using: adapter,
      steps: sqlSteps,
      policies: [{ name: "Hinter", version: "3", advise: () => ({ kind: "hint" as const, advice: "be careful" }) }],
    });
    assert.deepEqual([...hints], ["be careful"]);
  });
});

describe("run: adapters", () => {
  test("shell: runs commands in the workspace, records exit code and output excerpts", async () => {
    const ws = join(tmp.path, "ws-shell");
    (await import("node:fs")).mkdirSync(ws);
    const r = await runValid("make a file", {
      using: "shell",
      workspace: ws,
      steps: ["detect:look around", {
        kind: "act",
        description: "write",
        inputs: { command: "echo hi > out.txt && cat out.txt" },
      }],
    });
    assert.equal(r.status, "ok");
    assert.equal(readFileSync(join(ws, "out.txt"), "utf8"), "hi\n");
    const act = events(r.episode_dir).filter((e) => e.phase === "act")[1];
    assert.equal(act.payload.input_excerpt, "echo hi > out.txt && cat out.txt");
    assert.equal((act.payload.output as any).exit_code, 0);
    assert.equal((act.payload.output as any).stdout, "hi\n");
    assert.equal(act.payload.tool, "adapter:shell");
  });

  test("shell: a failing command gives adapter_result error, outcomes.error, and complete artifacts", async () => {
    const r = await runValid("fail", {
      using: "shell",
      steps: [{ kind: "act", description: "boom", inputs: { command: "echo oops >&2; exit 7" } }, "verify:never"],
    });
    assert.equal(r.status, "error");
    assert.equal(r.exit_code, 1);
    const state = json(r.episode_dir, "state.json");
    assert.deepEqual(state.outcomes.error, { type: "CommandFailed", message: "exit code 7" });
    assert.deepEqual(state.plan.steps.map((s: any) => s.status), ["failed", "pending"]);
    const summary = json(r.episode_dir, "summary.json");
    assert.equal(summary.adapter_result, "error");
    assert.equal(summary.outcome, "error");
    assert.equal(summary.metrics.success, 0);
  });

  test("shell: a command over its timeout is killed and reported", async () => {
    const r = await runValid("slow", {
      using: "shell",
      steps: [{ kind: "act", description: "sleep", inputs: { command: "sleep 5", timeout_ms: 100 } }],
    });
    assert.equal(r.status, "error");
    assert.equal(json(r.episode_dir, "state.json").outcomes.error.type, "Timeout");
  });

  test("command: wraps an external program as the act step and records its output", async () => {
    const r = await runValid("echo the task", {
      using: "command",
      args: ["sh", "-c", 'echo "task=$NOEMA_TASK"; echo "$1"', "sh", "{task}"],
    });
    assert.equal(r.status, "ok");
    const acts = events(r.episode_dir).filter((e) => e.phase === "act");
    assert.equal(acts.length, 3);
    const out = acts[1].payload.output as any;
    assert.equal(out.stdout, "task=echo the task\necho the task\n");
    assert.equal(acts[1].payload.kind, "command");
  });

  test("command: a missing program is an adapter error, not a crash", async () => {
    const r = await runValid("x", { using: "command", args: ["/nonexistent/agent-cli"] });
    assert.equal(r.status, "error");
    assert.equal(json(r.episode_dir, "state.json").outcomes.error.type, "SpawnError");
  });

  test("scripted: replays results by step id and in order, with a default", async () => {
    const script = tmp.file(
      "script.jsonc",
      `// replay
      { "results": [ { "step": "step-2", "status": "ok", "outcome": "second", "facts": [{ "key": "k", "value": 1 }] },
                     { "status": "ok", "outcome": "first" } ],
        "default": { "status": "skipped", "outcome": "nothing scripted" } }`,
    );
    const r = await runValid("replay", {
      using: "scripted",
      adapter: { script },
      steps: ["detect:a", "act:b", "verify:c"],
    });
    const acts = events(r.episode_dir).filter((e) => e.phase === "act");
    assert.deepEqual(acts.map((a) => a.payload.outcome), ["first", "second", "nothing scripted"]);
    assert.equal(r.status, "partial", "a skipped step makes the run partial");
    const state = json(r.episode_dir, "state.json");
    assert.deepEqual(state.memory.facts.map((f: any) => [f.key, f.value]), [["k", 1]]);
  });

  test("an adapter that throws or returns garbage is an error with complete artifacts", async () => {
    const thrower: AdapterPlugin = {
      name: "t",
      create: () => ({
        act: () => {
          throw new RangeError("kaput");
        },
      }),
    };
    const r1 = await runValid("t", { using: thrower });
    assert.deepEqual(json(r1.episode_dir, "state.json").outcomes.error, { type: "RangeError", message: "kaput" });
    const garbage: AdapterPlugin = { name: "g", create: () => ({ act: () => 42 as never }) };
    const r2 = await runValid("g", { using: garbage });
    assert.equal(json(r2.episode_dir, "state.json").outcomes.error.type, "InvalidAdapterResult");
  });

  test("the decision is on disk before the adapter acts (events are written in batches)", async () => {
    const seen: string[] = [];
    const reader: AdapterPlugin = {
      name: "reader",
      create: () => ({
        act: (req) => {
          const log = events(join(root, "episodes", req.episode_id));
          const decided = log.find((e) => e.phase === "governance" && e.payload.step_id === req.step.id);
          seen.push(`${req.step.id}:${decided?.payload.decision ?? "missing"}:${log.at(-1)!.phase}`);
          return { status: "ok", outcome: "ok" };
        },
      }),
    };
    const steps = [1, 2, 3].map((i) => ({ kind: "act" as const, description: `s${i}`, inputs: { i } }));
    await runValid("write-ahead", { using: reader, steps, policies: [vetoDrop] });
    assert.deepEqual(seen, ["step-1:allow:governance", "step-2:allow:governance", "step-3:allow:governance"]);
  });

  test("an aborted run ends as aborted with terminal artifacts", async () => {
    const ac = new AbortController();
    const slow: AdapterPlugin = {
      name: "slow",
      create: () => ({
        act: (req) =>
          new Promise((res) => {
            const stop = () => res({ status: "error", error: { type: "Aborted", message: "stopped" } });
            req.signal.addEventListener("abort", stop);
            ac.abort();
          }),
      }),
    };
    const r = await runValid("abort", { using: slow, signal: ac.signal });
    assert.equal(r.status, "aborted");
    assert.equal(events(r.episode_dir).find((e) => e.phase === "terminate")!.payload.status, "aborted");
  });
});

describe("run: learning, secrets, ids", () => {
  test("a veto records a threshold_tune proposal in learn.jsonl with a form-A learn event", async () => {
    const r = await runValid("drop", {
      policies: [vetoDrop],
      steps: [{ kind: "act", description: "d", inputs: { sql: "DROP TABLE t" } }],
    });
    const lines = readFileSync(join(r.episode_dir, "learn.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(lines.length, 1);
    assert.equal(lines[0].schema_version, "learn/1.0");
    assert.equal(lines[0].payload.proposal[0].kind, "threshold_tune");
    assert.deepEqual(lines[0].payload.proposal[0].target, { path: "direction_min_confidence", from: 0.5, to: 0.55 });
    const learnEvent = events(r.episode_dir).find((e) => e.phase === "learn")!;
    assert.deepEqual(learnEvent.payload.proposal_ids, [lines[0].payload.proposal[0].proposal_id]);
    assert.equal(learnEvent.payload.proposal_count, 1);
  });

  test("apply mode applies a tuning through its gate and later runs use it", async () => {
    const learnRoot = join(tmp.path, "learn-root");
    const opts: RunOptions = {
      root: learnRoot,
      learn_mode: "apply",
      learn_min_successes: 2,
      policies: [vetoDrop],
      steps: [{ kind: "act", description: "d", inputs: { sql: "DROP TABLE t" } }],
    };
    await run("drop", opts);
    assert.equal(readPolicySnapshot(learnRoot, "NoDrop@2.0").tuning.direction_min_confidence, undefined);
    const second = await run("drop", opts);
    assert.deepEqual(validate(second.episode_dir).problems, []);
    const snap = readPolicySnapshot(learnRoot, "NoDrop@2.0");
    assert.equal(snap.tuning.direction_min_confidence, 0.55);
    assert.equal(snap.history.at(-1)!.status, "applied");
    const third = await run("drop", opts);
    const dir = events(third.episode_dir).find((e) => e.phase === "direction")!;
    assert.equal(dir.payload.threshold, 0.55);
    assert.equal(json(third.episode_dir, "summary.json").flags.direction.threshold, 0.55, "the threshold used");
  });

  test("secret values and token shapes never reach an artifact", async () => {
    const secret = "s3cr3t-value-1234567890";
    const env = (await import("node:process")).default.env;
    env.NOEMA_TEST_SECRET = secret;
    const ws = join(tmp.path, "ws-secret");
    (await import("node:fs")).mkdirSync(ws);
    const r = await runValid(`use ${secret} and sk-abcdefghijklmnopqrstuvwx`, {
      using: "shell",
      workspace: ws,
      secrets: ["NOEMA_TEST_SECRET"],
      steps: [{ kind: "act", description: "echo", inputs: { command: `echo ${secret} | tee out.txt` } }],
    });
    assert.equal(readFileSync(join(ws, "out.txt"), "utf8"), `${secret}\n`, "the adapter acts with the real value");
    const act = events(r.episode_dir).find((e) => e.phase === "act")!;
    assert.equal(act.payload.input_excerpt, "echo [REDACTED:NOEMA_TEST_SECRET] | tee out.txt");
    for (const name of readdirSync(r.episode_dir)) {
      const text = readFileSync(join(r.episode_dir, name), "utf8");
      assert.ok(!text.includes(secret), `${name} must not contain the secret`);
      assert.ok(!text.includes("sk-abcdefghijklmnopqrstuvwx"), `${name} must not contain the token`);
    }
    const candidate = events(r.episode_dir).find((e) => e.phase === "action_candidate")!;
    assert.deepEqual((candidate.payload.redaction as any).secrets, ["NOEMA_TEST_SECRET"]);
    delete env.NOEMA_TEST_SECRET;
  });

  test("bad input fails before anything is written", async () => {
    const badRoot = join(tmp.path, "bad-root");
    await assert.rejects(run("x", { root: badRoot, episode_id: "../escape" }), /invalid episode id/);
    await assert.rejects(run("x", { root: badRoot, using: "nope" }), /unknown adapter "nope"/);
    await assert.rejects(
      run("x", { root: badRoot, policies: [join(tmp.path, "missing.ts")] }),
      /plugin file not found/,
    );
    await assert.rejects(
      run("x", { root: badRoot, policies: [{ advise: () => undefined } as never] }),
      /needs a "name"/,
    );
    await assert.rejects(
      run("x", {
        root: badRoot,
        steps: [{ id: "a", kind: "act", description: "1" }, { id: "a", kind: "act", description: "2" }],
      }),
      /duplicate step id/,
    );
    assert.throws(() => readdirSync(join(badRoot, "episodes")));
    const r = await runValid("named", { episode_id: "my-run-1" });
    assert.equal(r.episode_id, "my-run-1");
    await assert.rejects(run("again", { root, episode_id: "my-run-1" }), /already exists/);
  });

  test("planner plugins: a file, and a planner whose plan is invalid", async () => {
    const r = await runValid("build; test, then publish", {
      planner: join(import.meta.dirname ?? ".", "..", "plugins", "planners", "checklist.ts"),
    });
    const state = json(r.episode_dir, "state.json");
    assert.equal(state.plan.source, "planner:checklist");
    assert.deepEqual(state.plan.steps.map((s: any) => s.description), [
      "Collect relevant context",
      "build",
      "test",
      "publish",
      "Verify every item is done",
    ]);
    const manifest = json(r.episode_dir, "manifest.json");
    assert.equal(manifest.plugins.find((p: any) => p.kind === "planner").id, "planner:checklist");
    await assert.rejects(
      run("x", {
        root: join(tmp.path, "bad-planner"),
        planner: { name: "broken", plan: () => ({ steps: [{ id: "a", kind: "fly", description: "x" }] }) as never },
      }),
      /planner broken: steps\[0\]\.kind/,
    );
  });
});

describe("run: verification", () => {
  const writeStep = (cmd: string) => [{ kind: "act" as const, description: "write", inputs: { command: cmd } }];

  test("assertions that pass: success, snapshots in the manifest, a verify event, exit 0", async () => {
    const ws = join(tmp.path, "ws-verify-ok");
    (await import("node:fs")).mkdirSync(ws);
    tmp.file("ws-verify-ok/keep.txt", "same");
    const r = await runValid("write out.txt", {
      using: "shell",
      workspace: ws,
      steps: writeStep("echo hello > out.txt && printf same > keep.txt"),
      verify: [
        { kind: "file_exists", path: "out.txt" },
        { kind: "file_contains", path: "out.txt", text: "hello" },
        { kind: "only_modified", paths: ["out.txt"] },
      ],
    });
    assert.equal(r.outcome, "success");
    assert.equal(r.exit_code, 0);
    const summary = json(r.episode_dir, "summary.json");
    assert.equal(summary.verification.provided, true);
    assert.equal(summary.verification.passed, true);
    assert.deepEqual(
      summary.verification.workspace_diff,
      { added: ["out.txt"], modified: [], deleted: [] },
      "keep.txt rewritten with the same content is not modified",
    );
    assert.deepEqual(summary.verification.snapshots, { pre: "snapshots/pre.json", post: "snapshots/post.json" });
    assert.equal(summary.metrics.success, 1);
    const manifest = json(r.episode_dir, "manifest.json");
    assert.deepEqual(
      manifest.files.filter((f: any) => f.kind === "snapshot").map((f: any) => f.name),
      ["snapshots/post.json", "snapshots/pre.json"],
    );
    const verify = events(r.episode_dir).find((e) => e.phase === "verify")!;
    assert.equal(verify.payload.passed, true);
    assert.deepEqual(verify.payload.workspace_diff, { added: 1, modified: 0, deleted: 0 });
  });

  test("a failing assertion: goal_not_achieved, outcomes.status error with the reason, exit 1", async () => {
    const ws = join(tmp.path, "ws-verify-fail");
    (await import("node:fs")).mkdirSync(ws);
    const r = await runValid("write", {
      using: "shell",
      workspace: ws,
      steps: writeStep("touch other.txt"),
      verify: [{ kind: "file_exists", path: "out.txt" }],
    });
    assert.equal(r.outcome, "goal_not_achieved");
    assert.equal(r.status, "error");
    assert.equal(r.exit_code, 1);
    const state = json(r.episode_dir, "state.json");
    assert.deepEqual(state.outcomes.error, {
      type: "VerificationFailed",
      message: "file_exists failed: file_not_found: out.txt",
    });
    const summary = json(r.episode_dir, "summary.json");
    assert.equal(summary.verification.passed, false);
    assert.equal(summary.verification.assertions[0].reason, "file_not_found: out.txt");
    assert.equal(summary.metrics.success, 0);
    assert.equal(summary.adapter_result, "success");
  });

  test("a missing workspace is a usage error naming it (issue 23.11), before anything is written", async () => {
    const missingRoot = join(tmp.path, "missing-ws-root");
    await assert.rejects(
      run("nowhere", {
        root: missingRoot,
        workspace: join(tmp.path, "does-not-exist"),
        verify: [{ kind: "no_modifications" }],
      }),
      (e: NoemaError) => e.exitCode === EXIT.USAGE && /workspace .*does-not-exist: no such directory/.test(e.message),
    );
    assert.throws(() => readdirSync(join(missingRoot, "episodes")));
  });

  test("a workspace gone by the end of the run: verification.error workspace_unavailable, passed null", async () => {
    const ws = join(tmp.path, "ws-gone");
    (await import("node:fs")).mkdirSync(ws);
    const r = await runValid("remove the workspace", {
      using: "shell",
      workspace: ws,
      steps: writeStep(`rm -rf ${JSON.stringify(ws)}`),
      verify: [{ kind: "no_modifications" }],
    });
    const summary = json(r.episode_dir, "summary.json");
    assert.equal(summary.verification.error, "workspace_unavailable");
    assert.equal(summary.verification.passed, null);
    assert.equal(summary.outcome, "error");
    assert.equal(r.exit_code, 1);
  });

  test("an adapter error makes the outcome error whatever the assertions say", async () => {
    const ws = join(tmp.path, "ws-verify-adapter-error");
    (await import("node:fs")).mkdirSync(ws);
    const r = await runValid("fail", {
      using: "shell",
      workspace: ws,
      steps: writeStep("exit 4"),
      verify: [{ kind: "no_modifications" }],
    });
    assert.equal(json(r.episode_dir, "summary.json").outcome, "error");
    assert.equal(json(r.episode_dir, "summary.json").verification.passed, true);
  });

  test("a malformed assertion is a usage error naming the entry, and nothing is written", async () => {
    const badRoot = join(tmp.path, "bad-verify-root");
    await assert.rejects(
      run("x", {
        root: badRoot,
        verify: [{ kind: "file_exists" }],
        verify_source: "task.jsonc",
        verify_field: "verify",
      }),
      (e: any) => e.exitCode === 2 && /task\.jsonc: verify\[0\]\.path/.test(e.message),
    );
    await assert.rejects(run("x", { root: badRoot, verify: [{ kind: "telepathy" }] }), (e: any) => e.exitCode === 2);
    assert.throws(() => readdirSync(join(badRoot, "episodes")));
  });
});
