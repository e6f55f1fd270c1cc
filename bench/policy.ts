/**
 * Policy call overhead on an episode with 10,000 actions in
 * `outcomes.actions`, the state snapshot built the way the runtime builds it
 * ({@link StateSnapshot}: action records frozen once when appended, the view
 * rebuilt per call with a freshly frozen action input).
 *
 * Rows:
 * - in-thread `advise` on the snapshot (building it included), nothing new
 *   since the last call, vs a plain function call on an unfrozen object;
 * - in-thread `advise` with one action appended before each call (a run);
 * - worker `advise` (policy files, the default) with one action appended per
 *   call: only the new action crosses the boundary;
 * - worker `advise` when the whole 10k-action list is new (copied and frozen
 *   in the worker);
 * - a 1,000-step episode with the policy as a file (worker) vs the same policy
 *   passed in-process;
 * - a 10,000-step plan where one step changes status before each call (as a
 *   run marks its steps), the policy reading `plan.steps`: in-thread (goal
 *   ≤ 25 µs per call) and in the worker (only the changed step crosses); and
 *   a policy that checks `Object.isFrozen(state.plan.steps)` on every call,
 *   against the same check on a plain frozen array of 10,000 steps (under Bun
 *   that check alone costs milliseconds: JSC walks a frozen array's entries).
 *
 *     bun bench/policy.ts [--calls 20000]
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { loadPolicyFile, run, type State } from "../mod.ts";
import type { PolicyState } from "../src/plugins/api.ts";
import { StateSnapshot } from "../src/runtime/core/snapshot.ts";
import { displayCommand } from "../src/runtime/core/command.ts";
import { deepFreeze } from "../src/plugins/freeze.ts";
import { type BenchReport, fixed, flag, type Measure, runStandalone, tempDir } from "./lib.ts";

const ACTIONS = 10_000;

function action(i: number): NonNullable<NonNullable<State["outcomes"]>["actions"]>[number] {
  return {
    id: `act_step-${i}_${i + 1}`,
    kind: "tool",
    tool: "Bash",
    input_excerpt: `echo ${i}`,
    result_status: "ok",
    step_id: `step-${i}`,
    provenance: { adapter: "bench" },
    result_artifacts: [],
    timestamp: "2026-03-02T10:00:00.000Z",
    input: { command: `echo ${i}` },
    output: { exit_code: 0, stdout: `${i}\n` },
    duration_ms: 1,
  };
}

function makeState(): State {
  return {
    version: "1.0",
    state_schema_version: "1.0.0",
    episode: { id: "ep_bench", seed: 0, tags: {}, using: "bench", started_at: "2026-03-02T10:00:00.000Z" },
    goal: { task: "bench", type: "general" },
    beliefs: [{ statement: "bench", confidence: 0.5, provenance: "interpret" }],
    plan: { steps: [{ id: "step-1", kind: "act", description: "run", status: "pending" }], source: "bench" },
    memory: { facts: [] },
    outcomes: {
      status: "pending",
      actions: Array.from({ length: ACTIONS }, (_, i) => action(i)),
      metrics: { task_score: 0, steps_completed: 0, steps_total: 1 },
      artifacts: [],
      error: null,
    },
    links: { events: "events.jsonl", learn: "learn.jsonl" },
  };
}

const POLICY_SOURCE = `export default {
  name: "BenchPolicy",
  version: "1.0",
  advise(s) {
    return s.step.index % 100 === 0 && s.outcomes.actions.length > 0 ? { kind: "hint", advice: "checkpoint" } : undefined;
  },
};
`;
type Probe = { step: { index: number }; outcomes: { actions: readonly unknown[] } };
const advise = (s: Probe) =>
  s.step.index % 100 === 0 && s.outcomes.actions.length > 0
    ? { kind: "hint" as const, advice: "checkpoint" }
    : undefined;

/** The view as the runtime builds it per call. */
function view(snapshot: StateSnapshot, i: number): PolicyState {
  const input = { command: `echo ${i}` };
  const step = Object.freeze({
    id: `step-${i}`,
    kind: "act",
    description: `step ${i}`,
    index: i,
    total: 1_000_000,
    inputs: deepFreeze({ command: `echo ${i}` }),
  });
  const act = Object.freeze({
    kind: "tool",
    tool: "Bash",
    input: deepFreeze(structuredClone(input)),
    command: displayCommand(input),
  });
  return snapshot.view(act, step, { workspace: null });
}

const STEPS = 10_000;

/** A state whose plan has {@link STEPS} steps (and a few actions). */
function makeStepsState(): State {
  const state = makeState();
  state.plan!.steps = Array.from({ length: STEPS }, (_, i) => ({
    id: `step-${i + 1}`,
    kind: "act" as const,
    description: `step ${i + 1}`,
    status: "pending" as const,
    inputs: { command: `echo ${i}` },
  }));
  state.outcomes!.actions = state.outcomes!.actions!.slice(0, 10);
  return state;
}

type StepsProbe = { step: { index: number }; plan: { steps: readonly { status: string }[] } };
/** A policy that reads the plan: the step about to run and the one before it. */
const readsPlan = (s: StepsProbe) => {
  const steps = s.plan.steps, i = s.step.index % steps.length;
  return steps[i].status === "failed" || (i > 0 && steps[i - 1].status === "failed")
    ? { kind: "veto" as const, advice: "a step failed" }
    : undefined;
};
/** A policy that checks that the plan it got is frozen, on every call. */
const checksFrozen = (s: StepsProbe) =>
  Object.isFrozen(s.plan.steps) ? undefined : { kind: "veto" as const, advice: "the state is not frozen" };

const STEPS_POLICY_SOURCE = `export default {
  name: "ReadsPlan",
  version: "1.0",
  advise(s) {
    const steps = s.plan.steps, i = s.step.index % steps.length;
    return steps[i].status === "failed" ? { kind: "veto", advice: "a step failed" } : undefined;
  },
};
`;

/** Per call: step `i % STEPS` changes status (done, then pending again on the next lap), as a run marks it. */
function changeStep(state: State, snapshot: StateSnapshot, i: number): void {
  const index = i % STEPS;
  const step = state.plan!.steps[index];
  step.status = step.status === "done" ? "pending" : "done";
  snapshot.markStep(index);
}

async function timeCalls(n: number, call: (i: number) => unknown): Promise<number> {
  const t = performance.now();
  for (let i = 0; i < n; i++) await call(i);
  return ((performance.now() - t) * 1000) / n; // µs per call
}

/** Runs the benchmark and returns its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const calls = Number(flag(args, "calls") ?? 20_000);
  const tmp = tempDir("noema-bench-policy-");
  try {
    const plainState = { step: { index: 0 }, outcomes: makeState().outcomes! as Probe["outcomes"] };
    const state = makeState();
    const snapshot = new StateSnapshot(state);
    const file = join(tmp.path, "bench-policy.js");
    writeFileSync(file, POLICY_SOURCE);

    // Warm up, then measure.
    await timeCalls(2000, (i) => advise({ ...plainState, step: { index: i } }));
    const plain = await timeCalls(calls, (i) => advise({ ...plainState, step: { index: i } }));
    await timeCalls(2000, (i) => advise(view(snapshot, i)));
    const frozen = await timeCalls(calls, (i) => advise(view(snapshot, i)));
    const actions = state.outcomes!.actions!;
    // The records the runtime appends between calls, built beforehand: the timing is the snapshot's (freezing the
    // new record, the list view) and the call's, not building the record.
    const appended = Array.from({ length: calls }, (_, i) => action(ACTIONS + i));
    const growing = await timeCalls(calls, (i) => {
      actions.push(appended[i]);
      return advise(view(snapshot, i));
    });
    actions.length = ACTIONS;

    const policy = await loadPolicyFile(file);
    if (policy.isolation !== "worker") throw new Error("the policy did not load in a worker");
    await timeCalls(200, (i) => policy.advise(view(snapshot, i)));
    const workerCalls = Math.max(1000, Math.round(calls / 4));
    const worker = await timeCalls(workerCalls, (i) => {
      actions.push(action(ACTIONS + i));
      return policy.advise(view(snapshot, i));
    });
    const changing = await timeCalls(20, (i) => {
      state.outcomes!.actions = Array.from({ length: ACTIONS }, (_, k) => action(k));
      return policy.advise(view(snapshot, i));
    });
    policy.close?.();

    // A 10,000-step plan, one step changed before each call.
    const stepsState = makeStepsState();
    const stepsSnapshot = new StateSnapshot(stepsState);
    const plainSteps = { step: { index: 0 }, plan: { steps: makeStepsState().plan!.steps } };
    await timeCalls(2000, (i) => readsPlan({ ...plainSteps, step: { index: i } }));
    const plainPlan = await timeCalls(calls, (i) => readsPlan({ ...plainSteps, step: { index: i } }));
    await timeCalls(2000, (i) => (changeStep(stepsState, stepsSnapshot, i), readsPlan(view(stepsSnapshot, i))));
    const stepChanged = await timeCalls(calls, (i) => {
      changeStep(stepsState, stepsSnapshot, i);
      return readsPlan(view(stepsSnapshot, i));
    });
    const frozenCalls = 20;
    const realFrozen = Object.freeze(makeStepsState().plan!.steps.map((x) => Object.freeze(x)));
    const isFrozenBaseline = await timeCalls(
      frozenCalls,
      () => checksFrozen({ ...plainSteps, plan: { steps: realFrozen } }),
    );
    const isFrozenCheck = await timeCalls(frozenCalls, (i) => {
      changeStep(stepsState, stepsSnapshot, i);
      const verdict = checksFrozen(view(stepsSnapshot, i));
      if (verdict) throw new Error("the plan given to advise is not frozen");
      return verdict;
    });
    const stepsFile = join(tmp.path, "reads-plan.js");
    writeFileSync(stepsFile, STEPS_POLICY_SOURCE);
    const stepsPolicy = await loadPolicyFile(stepsFile);
    await timeCalls(200, (i) => (changeStep(stepsState, stepsSnapshot, i), stepsPolicy.advise(view(stepsSnapshot, i))));
    const stepsWorker = await timeCalls(workerCalls, (i) => {
      changeStep(stepsState, stepsSnapshot, i);
      return stepsPolicy.advise(view(stepsSnapshot, i));
    });
    stepsPolicy.close?.();

    // Whole episodes: the same policy as a file (worker) and in-process.
    const steps = Array.from(
      { length: 1000 },
      (_, i) => ({ kind: "act" as const, description: `step ${i}`, inputs: { n: i } }),
    );
    const script = join(tmp.path, "script.json");
    writeFileSync(script, JSON.stringify({ results: [], default: { status: "ok", outcome: "ok" } }));
    const episodeMs = async (
      policies: Parameters<typeof run>[1] extends infer O ? O extends { policies?: infer P } ? P : never : never,
      root: string,
    ) => {
      const t = performance.now();
      const r = await run("bench", {
        root,
        using: "scripted",
        adapter: { script },
        learn_mode: "off",
        steps,
        policies,
      });
      if (r.status !== "ok") throw new Error(`episode ended ${r.status}`);
      return performance.now() - t;
    };
    await episodeMs([{ name: "BenchPolicy", version: "1.0", advise }], join(tmp.path, "warm"));
    const inline = Math.min(
      await episodeMs([{ name: "BenchPolicy", version: "1.0", advise }], join(tmp.path, "inline-1")),
      await episodeMs([{ name: "BenchPolicy", version: "1.0", advise }], join(tmp.path, "inline-2")),
    );
    const viaFile = Math.min(
      await episodeMs([file], join(tmp.path, "file-1")),
      await episodeMs([file], join(tmp.path, "file-2")),
    );

    const frozenRatio = frozen / plain;
    const workerRatio = worker / growing;
    const episodeRatio = viaFile / inline;
    const met = (x: boolean) => (x ? "yes" : "NO");
    const k = `${ACTIONS / 1000}k`;
    const measures: Measure[] = [
      {
        measure: `in-thread advise, ${k}-action snapshot, unchanged (µs/call)`,
        value: fixed(frozen, 2),
        baseline: `plain call ${fixed(plain, 3)}`,
        ratio: `${fixed(frozenRatio, 1)}×`,
        goal: "≤ 10 µs/call",
        met: met(frozen <= 10),
      },
      {
        measure: `in-thread advise, ${k}-action snapshot, +1 action per call (µs/call)`,
        value: fixed(growing, 2),
        baseline: `plain call ${fixed(plain, 3)}`,
        ratio: `${fixed(growing / plain, 1)}×`,
        goal: "≤ 10 µs/call",
        met: met(growing <= 10),
      },
      {
        measure: `worker advise, +1 action per call (delta) (µs/call)`,
        value: fixed(worker, 1),
        baseline: `in-thread ${fixed(growing, 2)}`,
        ratio: `${fixed(workerRatio, 0)}×`,
        goal: "≤ 250 µs/call",
        met: met(worker <= 250),
      },
      {
        measure: `worker advise, whole ${k}-action list new (ms/call)`,
        value: fixed(changing / 1000, 1),
        baseline: "-",
        ratio: "-",
        goal: "-",
        met: "-",
      },
      {
        measure: `in-thread advise, ${STEPS / 1000}k-step plan, 1 step changed per call (µs/call)`,
        value: fixed(stepChanged, 2),
        baseline: `plain call ${fixed(plainPlan, 3)}`,
        ratio: `${fixed(stepChanged / plainPlan, 1)}×`,
        goal: "≤ 25 µs/call",
        met: met(stepChanged <= 25),
      },
      {
        measure: `worker advise, ${STEPS / 1000}k-step plan, 1 step changed per call (µs/call)`,
        value: fixed(stepsWorker, 1),
        baseline: `in-thread ${fixed(stepChanged, 2)}`,
        ratio: `${fixed(stepsWorker / stepChanged, 0)}×`,
        goal: "≤ 250 µs/call",
        met: met(stepsWorker <= 250),
      },
      {
        measure: `in-thread advise checking Object.isFrozen(plan.steps), ${STEPS / 1000}k steps, 1 changed (µs/call)`,
        value: fixed(isFrozenCheck, 1),
        baseline: `isFrozen of a frozen array ${fixed(isFrozenBaseline, 1)}`,
        ratio: `${fixed(isFrozenCheck / isFrozenBaseline, 1)}×`,
        goal: "-",
        met: "-",
      },
      {
        measure: "1,000-step episode, policy file in a worker (ms)",
        value: fixed(viaFile, 0),
        baseline: `in-process ${fixed(inline, 0)}`,
        ratio: `${fixed(episodeRatio, 2)}×`,
        goal: "≤ 1.5×",
        met: met(episodeRatio <= 1.5),
      },
    ];
    const ok = frozen <= 10 && growing <= 10 && worker <= 250 && episodeRatio <= 1.5 && stepChanged <= 25 &&
      stepsWorker <= 250;
    return {
      name: "policy",
      ok,
      measures,
      tables: [{
        title: `policy calls on a state snapshot with ${ACTIONS.toLocaleString("en")} actions`,
        columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
        rows: measures.map((m) => [m.measure, m.value, m.baseline, m.ratio, m.goal, m.met]),
        notes: [
          `${calls.toLocaleString("en")} in-thread calls, ${
            workerCalls.toLocaleString("en")
          } worker calls; the view is rebuilt per call as the runtime does (StateSnapshot).`,
          "The worker receives the state per top-level key; plan.steps, outcomes.actions and memory.facts cross as deltas.",
          `The ${
            STEPS.toLocaleString("en")
          }-step rows change one step's status before each call (markStep, as a run does); the lists given to advise are frozen (Object.isFrozen), made so only when a policy asks (see list_view.ts).`,
        ],
      }],
    };
  } finally {
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
