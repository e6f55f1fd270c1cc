// deno-lint-ignore-file no-explicit-any -- tests read artifacts as loose JSON
/**
 * Policies receive the contract's state snapshot (issue 11 §1): a policy
 * written only from the contract runs in-thread and in a worker and can veto;
 * the snapshot is as it stands at that moment, deeply frozen; the worker
 * receives the big lists as deltas.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EpisodeCore, loadPolicyFile, PolicyGovernor, type PolicyState, run, validate } from "noema";
import { StateSnapshot } from "../src/runtime/core/snapshot.ts";
import { frozenJsonCopy } from "../src/plugins/freeze.ts";
import { displayCommand } from "../src/runtime/core/command.ts";
import { CONTRACT_POLICY_SOURCE } from "./helpers/contract_policy.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir();
after(() => tmp.cleanup());
const root = join(tmp.path, "root");
const policyFile = join(tmp.path, "contract-probe.ts");
writeFileSync(policyFile, CONTRACT_POLICY_SOURCE);

function events(dir: string): any[] {
  return readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
}

const steps = [
  { kind: "act" as const, description: "one", inputs: { command: "echo one" } },
  { kind: "act" as const, description: "two", inputs: { argv: ["echo", "two words"] } },
  { kind: "act" as const, description: "clean", inputs: { command: "rm -rf build" } },
];

async function probe(isolation: "worker" | "thread") {
  const ws = join(tmp.path, `ws-${isolation}`);
  mkdirSync(join(ws, "build"), { recursive: true });
  const policy = isolation === "worker" ? policyFile : (await import(policyFile)).default;
  const r = await run("Tidy the workspace", { root, using: "shell", workspace: ws, policies: [policy], steps });
  assert.deepEqual(validate(r.episode_dir).problems, []);
  const seen = events(r.episode_dir).filter((e) => e.phase === "direction").map((e) => JSON.parse(e.payload.advice));
  return { r, seen, ws };
}

describe("advise receives the contract's state snapshot", () => {
  for (const isolation of ["worker", "thread"] as const) {
    test(`a policy written from the contract sees the state as it stands and vetoes (${isolation})`, async () => {
      if (isolation === "worker") assert.equal((await loadPolicyFile(policyFile)).isolation, "worker");
      const { r, seen, ws } = await probe(isolation);
      assert.equal(r.status, "vetoed");
      assert.equal(r.exit_code, 3);
      assert.ok(existsSync(join(ws, "build")), "the vetoed rm -rf did not run");
      assert.equal(seen.length, 3);
      for (const s of seen) {
        assert.equal(s.version, "1.0");
        assert.equal(s.state_schema_version, "1.0.0");
        assert.equal(s.task, "Tidy the workspace");
        assert.equal(s.intuition_mode, "interventive");
        assert.equal(s.links, "events.jsonl");
        assert.equal(s.beliefs, 1);
        assert.equal(s.total, 3);
        assert.equal(s.frozen, true);
        assert.equal(s.threw, true, "assigning to the frozen state throws");
        assert.deepEqual(s.unfrozen, [], "every object and array the policy can reach is frozen");
        assert.equal(s.refreeze, true);
      }
      assert.deepEqual(seen.map((s) => s.statuses), [
        ["pending", "pending", "pending"],
        ["done", "pending", "pending"],
        ["done", "done", "pending"],
      ]);
      assert.deepEqual(seen.map((s) => s.actions), [[], ["ok"], ["ok", "ok"]]);
      assert.deepEqual(seen.map((s) => s.command), ["echo one", "echo 'two words'", "rm -rf build"]);
      assert.deepEqual(seen.map((s) => s.index), [0, 1, 2]);
    });
  }
});

describe("the library's PolicyGovernor gives the same frozen state", () => {
  for (const isolation of ["worker", "thread"] as const) {
    test(`every object and array a policy reaches is frozen (${isolation})`, async () => {
      const policy = isolation === "worker" ? policyFile : (await import(policyFile)).default;
      const gov = await PolicyGovernor.create({ policies: [policy], task: "Tidy" });
      const seen: any[] = [];
      for (const [i, command] of ["echo one", "echo two", "rm -rf build"].entries()) {
        const d = await gov.propose({ kind: "tool", tool: "shell", input: { command }, call_id: `c${i}` });
        seen.push(JSON.parse(d.hints[0] ?? d.reason!.replace(/^[^{]*/, "")));
        if (d.verdict !== "deny") await gov.record(`c${i}`, { status: "ok", outcome: "exit 0" });
      }
      for (const s of seen) {
        assert.deepEqual(s.unfrozen, [], "every object and array the policy can reach is frozen");
        assert.equal(s.frozen, true);
        assert.equal(s.threw, true);
      }
      assert.deepEqual(seen.map((s) => s.statuses.length), [1, 2, 3]);
      await gov.close?.();
    });
  }
});

describe("the snapshot is incremental", () => {
  const state: any = {
    version: "1.0",
    state_schema_version: "1.0.0",
    episode: { id: "ep_x", started_at: "2026-01-01T00:00:00Z", intuition_mode: "advisory" },
    plan: { steps: [{ id: "s1", kind: "act", description: "a", status: "pending" }] },
    memory: { facts: [] },
    outcomes: { status: "pending", actions: [], metrics: { steps_completed: 0 }, artifacts: [] },
    links: { events: "events.jsonl" },
  };
  const snap = new StateSnapshot(state);

  test("unchanged parts are the same frozen objects; appended actions are frozen once; step changes show", () => {
    const a = snap.state();
    const b = snap.state();
    assert.equal(a.outcomes.actions, b.outcomes.actions);
    assert.equal(a.episode, b.episode);
    for (const part of ["plan", "outcomes", "memory"] as const) assert.equal(a[part], b[part], `${part} is reused`);
    state.outcomes.actions.push({ id: "act1", result_status: "ok", input: { x: [1] } });
    state.outcomes.metrics.steps_completed = 1;
    state.plan.steps[0].status = "done";
    const c = snap.state();
    assert.equal(c.plan.steps[0].status, "pending", "a step change not marked is not seen (mark it)");
    snap.markStep(0);
    const d = snap.state();
    assert.equal(d.plan.steps[0].status, "done");
    assert.equal(d.outcomes.actions.length, 1);
    assert.equal(d.outcomes.metrics?.steps_completed, 1);
    assert.notEqual(d.outcomes, b.outcomes, "a changed number makes a new outcomes part");
    assert.equal(b.outcomes.metrics?.steps_completed, 0, "an earlier snapshot keeps its metrics");
    assert.equal(d.memory, b.memory, "memory did not change");
    assert.ok(Object.isFrozen(d.outcomes.actions[0].input));
    assert.equal(c.outcomes.actions, d.outcomes.actions, "the list is rebuilt only when it grows");
    assert.equal(b.outcomes.actions.length, 0, "an earlier snapshot does not change");
    assert.equal(a.plan.steps[0].status, "pending");
    assert.throws(() => (d.plan.steps as any).push({}), TypeError);
  });

  test("a step is copied before it is frozen: the runtime's later changes in place do not show in a snapshot", () => {
    const live: any = structuredClone(state);
    live.plan.steps[0].status = "pending";
    live.plan.steps[0].evidence_ids = ["ev_1"];
    const s = new StateSnapshot(live);
    const before = s.state();
    live.plan.steps[0].status = "running";
    live.plan.steps[0].evidence_ids.push("ev_2");
    assert.equal(before.plan.steps[0].status, "pending");
    assert.deepEqual(before.plan.steps[0].evidence_ids, ["ev_1"]);
    assert.ok(Object.isFrozen(before.plan.steps[0].evidence_ids));
    assert.ok(!Object.isFrozen(live.plan.steps[0]), "the live step is not frozen");
  });

  test("frozenJsonCopy: a deep, frozen, independent copy of JSON data", () => {
    const live = { a: [1, { b: "x" }], n: null, t: true, s: "s", nested: { deep: { k: [2] } } };
    const copy = frozenJsonCopy(live);
    assert.deepEqual(copy, live);
    assert.notEqual(copy.nested, live.nested);
    live.nested.deep.k.push(3);
    (live.a[1] as { b: string }).b = "y";
    assert.deepEqual(copy.nested.deep.k, [2]);
    assert.equal((copy.a[1] as { b: string }).b, "x");
    assert.ok(Object.isFrozen(copy) && Object.isFrozen(copy.a) && Object.isFrozen(copy.nested.deep.k));
    const when = new Date(0);
    const withDate = frozenJsonCopy({ when });
    assert.ok(withDate.when instanceof Date && withDate.when.getTime() === 0, "a Date stays a Date (structuredClone)");
    assert.notEqual(withDate.when, when);
    assert.equal(frozenJsonCopy("plain"), "plain");
    assert.equal(frozenJsonCopy(null), null);
    // A policy sees a key `__proto__` as the key it is, not as the prototype of what it reads.
    const hostile = frozenJsonCopy(JSON.parse('{"__proto__": {"command": "git push"}}')) as Record<string, unknown>;
    assert.equal(hostile.command, undefined);
    assert.equal(Object.getPrototypeOf(hostile), Object.prototype);
    assert.equal(JSON.stringify(hostile), '{"__proto__":{"command":"git push"}}');
  });

  test("the display command quotes argv like a POSIX shell", () => {
    assert.equal(displayCommand({ argv: ["rm", "-rf", "my build", "it's"] }), `rm -rf 'my build' 'it'\\''s'`);
    assert.equal(displayCommand({ command: "git push --force" }), "git push --force");
    assert.equal(displayCommand({ file_path: "/a/b.ts", content: "x" }), "/a/b.ts");
    assert.equal(displayCommand({}), "");
  });

  test("the worker gets only the new actions and still sees the whole list", async () => {
    const file = join(tmp.path, "count.ts");
    writeFileSync(
      file,
      `export default { name: "Count", advise(s) { return { kind: "hint", advice: String(s.outcomes.actions.length) + ":" + String(s.outcomes.actions.every((a) => Object.isFrozen(a))) + ":" + s.outcomes.actions.map((a) => a.id).join(",") } } };`,
    );
    const policy = await loadPolicyFile(file);
    assert.equal(policy.isolation, "worker");
    try {
      const live: any = structuredClone(state);
      live.outcomes.actions = [];
      const s = new StateSnapshot(live);
      const step = { id: "s", kind: "act", description: "d", index: 0, total: 1, inputs: {} };
      const action = { kind: "tool", tool: "Bash", input: {}, command: "" };
      const ask = async () => ((await policy.advise(s.view(action, step) as PolicyState)) as any).advice;
      assert.equal(await ask(), "0:true:");
      for (let i = 1; i <= 3; i++) {
        live.outcomes.actions.push({ id: `a${i}` });
        assert.equal(await ask(), `${i}:true:${Array.from({ length: i }, (_, k) => `a${k + 1}`).join(",")}`);
      }
      live.outcomes.actions = [{ id: "b1" }]; // a new list: sent whole
      assert.equal(await ask(), "1:true:b1");
    } finally {
      policy.close?.();
    }
  });
});

describe("policy workers between episodes", () => {
  test("the next episode of the same process gets the same warm worker: module state carries over, as in-thread", async () => {
    const counter = join(tmp.path, "counter-policy.ts");
    writeFileSync(
      counter,
      `let calls = 0;
export default { name: "Counter", version: "1.0", advise() { calls++; return { kind: "hint", advice: String(calls) }; } };
`,
    );
    // EpisodeCore closes its policies when the episode ends (run() leaves them to the garbage collector).
    const advice = async () => {
      const core = await EpisodeCore.open("count", { root, using: "test", policies: [counter] });
      const d = await core.propose({ kind: "tool", tool: "Bash", input: { command: "true" }, call_id: "c1" });
      await core.finish();
      return d.hints;
    };
    assert.deepEqual(await advice(), ["1"]);
    assert.deepEqual(await advice(), ["2"], "the worker and its module were kept for the next episode");
    const edited = readFileSync(counter, "utf8").replace("calls++", "calls += 10");
    writeFileSync(counter, edited);
    assert.deepEqual(await advice(), ["10"], "an edited file gets a worker of its own");
  });
});
