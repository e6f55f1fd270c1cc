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
 *   passed in-process.
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
        measure: "1,000-step episode, policy file in a worker (ms)",
        value: fixed(viaFile, 0),
        baseline: `in-process ${fixed(inline, 0)}`,
        ratio: `${fixed(episodeRatio, 2)}×`,
        goal: "≤ 1.5×",
        met: met(episodeRatio <= 1.5),
      },
    ];
    const ok = frozen <= 10 && growing <= 10 && worker <= 250 && episodeRatio <= 1.5;
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
        ],
      }],
    };
  } finally {
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
