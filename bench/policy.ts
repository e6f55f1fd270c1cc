/**
 * Policy call overhead on a 10k-fact state, built the way the runtime builds
 * it: facts deep-frozen once, the view `Object.freeze`d per step with a
 * freshly frozen action input.
 *
 * Rows:
 * - in-thread `advise` on the frozen view (building the view included) vs a
 *   plain function call on an unfrozen object: the cost of freezing;
 * - worker `advise` (policy files, the default) per call, facts unchanged
 *   (sent once, then as `same`), vs the in-thread call: the cost of isolation;
 * - worker `advise` when the facts changed since the previous call (the
 *   10k facts copied and frozen in the worker);
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
import { deepFreeze } from "../src/plugins/freeze.ts";
import { loadPolicyFile, run } from "../mod.ts";
import type { PolicyState } from "../src/plugins/api.ts";
import { type BenchReport, fixed, flag, type Measure, runStandalone, tempDir } from "./lib.ts";

const FACTS = 10_000;

function makeFacts(): { key: string; value: unknown; timestamp: string; provenance: string }[] {
  return Array.from({ length: FACTS }, (_, i) => ({
    key: `fact.${i}`,
    value: { n: i, label: `value ${i}`, tags: ["a", "b"] },
    timestamp: "2026-03-02T10:00:00.000Z",
    provenance: "adapter:bench",
  }));
}

const POLICY_SOURCE = `export default {
  name: "BenchPolicy",
  version: "1.0",
  advise(s) {
    return s.step.index % 100 === 0 && s.facts.length > 0 ? { kind: "hint", advice: "checkpoint" } : undefined;
  },
};
`;
const advise = (s: { step: { index: number }; facts: readonly unknown[] }) =>
  s.step.index % 100 === 0 && s.facts.length > 0 ? { kind: "hint" as const, advice: "checkpoint" } : undefined;

/** Builds the view as the runtime does (facts frozen once, the rest per step). */
function view(facts: readonly unknown[], episode: unknown, i: number): PolicyState {
  const inputs = deepFreeze({ n: i, sql: `SELECT ${i}` });
  return Object.freeze({
    task: "bench",
    episode,
    step: Object.freeze({ id: `step-${i}`, kind: "act", description: `step ${i}`, index: i, total: 1_000_000, inputs }),
    action: Object.freeze({
      kind: "adapter",
      tool: "adapter:scripted",
      input: deepFreeze(structuredClone({ n: i, sql: `SELECT ${i}` })),
    }),
    recent_actions: Object.freeze([]),
    facts,
    workspace: null,
  }) as unknown as PolicyState;
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
    const facts = Object.freeze(makeFacts().map((f) => deepFreeze(f)));
    const plainFacts = makeFacts();
    const episode = deepFreeze({
      id: "ep_bench",
      seed: 0,
      tags: {},
      mode: "meta",
      intuition_mode: "interventive",
      using: "scripted",
    });
    const file = join(tmp.path, "bench-policy.js");
    writeFileSync(file, POLICY_SOURCE);

    // Warm up, then measure.
    await timeCalls(2000, (i) => advise({ step: { index: i }, facts: plainFacts }));
    const plain = await timeCalls(calls, (i) => advise({ step: { index: i }, facts: plainFacts }));
    await timeCalls(2000, (i) => advise(view(facts, episode, i)));
    const frozen = await timeCalls(calls, (i) => advise(view(facts, episode, i)));

    const policy = await loadPolicyFile(file);
    if (policy.isolation !== "worker") throw new Error("the policy did not load in a worker");
    await timeCalls(200, (i) => policy.advise(view(facts, episode, i)));
    const workerCalls = Math.max(1000, Math.round(calls / 4));
    const worker = await timeCalls(workerCalls, (i) => policy.advise(view(facts, episode, i)));
    const changing = await timeCalls(
      50,
      (i) => policy.advise(view(Object.freeze(makeFacts().map((f) => deepFreeze(f))), episode, i)),
    );
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
    const workerRatio = worker / frozen;
    const episodeRatio = viaFile / inline;
    const met = (x: boolean) => (x ? "yes" : "NO");
    const measures: Measure[] = [
      {
        measure: `in-thread advise, frozen ${FACTS / 1000}k-fact view (µs/call)`,
        value: fixed(frozen, 2),
        baseline: `plain call ${fixed(plain, 3)}`,
        ratio: `${fixed(frozenRatio, 1)}×`,
        goal: "≤ 10 µs/call",
        met: met(frozen <= 10),
      },
      {
        measure: `worker advise, facts unchanged (µs/call)`,
        value: fixed(worker, 1),
        baseline: `in-thread ${fixed(frozen, 2)}`,
        ratio: `${fixed(workerRatio, 0)}×`,
        goal: "≤ 250 µs/call",
        met: met(worker <= 250),
      },
      {
        measure: `worker advise, ${FACTS / 1000}k facts changed (ms/call)`,
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
    const ok = frozen <= 10 && worker <= 250 && episodeRatio <= 1.5;
    return {
      name: "policy",
      ok,
      measures,
      tables: [{
        title: `policy calls on a ${FACTS.toLocaleString("en")}-fact frozen state`,
        columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
        rows: measures.map((m) => [m.measure, m.value, m.baseline, m.ratio, m.goal, m.met]),
        notes: [
          `${calls.toLocaleString("en")} in-thread calls, ${
            workerCalls.toLocaleString("en")
          } worker calls; the view is rebuilt per call as the runtime does.`,
          "The worker receives the state per top-level key and reuses a key whose value is the same object as last time.",
        ],
      }],
    };
  } finally {
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
