/**
 * What noema adds per tool call to an AI SDK agent loop, on the same
 * scripted OpenAI-compatible server (127.0.0.1, tests/helpers/openai_server.ts):
 *
 * - baseline: the bare AI SDK loop (`generateText` with the tools, no hooks);
 * - noema, `govern()`: the same loop with the governed hooks over the
 *   policy governor (each call proposed to one policy and recorded in
 *   memory) and every model call recorded in `model.jsonl`; once with the
 *   policy in-process, once as a policy file (worker thread, the default for
 *   files);
 * - noema, episode: what `noema run --using llm` does: the hooks over the
 *   episode core (each call an `act` step: plan, direction, candidate,
 *   governance and act events, the state flushed now and then) and
 *   `model.jsonl` through the masking sink. Opening and finishing the
 *   episode (verification, summary, manifest) is a fixed cost per episode,
 *   shown on its own row, not in the loop's time.
 *
 * Each run is `--turns` model turns of `--calls` parallel tool calls of a
 * cheap in-memory tool, then a final answer. Goal: ≤ 1.2× the baseline and
 * ≤ 2 ms added per tool call.
 *
 * Every variant first runs `--warmup` times unmeasured (the JIT compiles
 * noema's code during a process's first runs: a one-off cost per process,
 * not a cost per call).
 *
 *     bun bench/llm.ts [--turns 40] [--calls 5] [--runs 40] [--warmup 10]
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, isStepCount, type LanguageModel, type ToolSet, wrapLanguageModel } from "ai";
import { toAiSdkTools } from "../src/llm/ai_tools.ts";
import { governedHooks } from "../src/llm/hooks.ts";
import { modelRecorder } from "../src/llm/model_log.ts";
import { PolicyGovernor } from "../src/llm/policy_governor.ts";
import type { LlmTool } from "../src/llm/tools/tool.ts";
import { JsonlAppender } from "../src/store/jsonl.ts";
import { ArtifactSink } from "../src/runtime/artifact_sink.ts";
import { EpisodeCore } from "../src/runtime/core/episode_core.ts";
import { Redactor } from "../src/runtime/redact.ts";
import { startOpenAiServer } from "../tests/helpers/openai_server.ts";
import { type BenchReport, fixed, flag, type Measure, median, runStandalone, tempDir } from "./lib.ts";

const lookup: LlmTool = {
  name: "lookup",
  description: "Look a key up",
  parameters: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
  execute: (input) => ({ key: input.key, value: String(input.key).length }),
};

const POLICY = `export default { name: "BenchGuard", version: "1.0", advise(s) {
  if (String(s.action.input.key ?? "").includes("forbidden")) return { kind: "veto", advice: "no" };
} };\n`;

/** Wall and CPU milliseconds of one run (CPU: this process's user + system time, worker threads included). */
interface Timing {
  wall: number;
  cpu: number;
}

type Variant = "bare" | "inline" | "file" | "core" | "core-file";

const benchGuard = {
  name: "BenchGuard",
  version: "1.0",
  advise: (s: { action: { input: Record<string, unknown> } }) =>
    String(s.action.input.key ?? "").includes("forbidden") ? { kind: "veto" as const, advice: "no" } : undefined,
};

/** The loop over an episode core, as `noema run --using llm` drives it; `fixed`: open + finish. */
async function episodeLoop(
  variant: "core" | "core-file",
  base: LanguageModel,
  tools: ToolSet,
  turns: number,
  dir: string,
): Promise<Timing & { fixed: number }> {
  const f0 = process.cpuUsage();
  const core = await EpisodeCore.open("bench", {
    root: dir,
    workspace: dir,
    using: "llm",
    policies: [variant === "core-file" ? join(dir, "guard.ts") : benchGuard],
  });
  core.batchEvents = true; // as driveLlmEpisode (noema run --using llm) sets it
  const opened = process.cpuUsage(f0);
  const log = new ArtifactSink(core.dir, new Redactor()).jsonl("model.jsonl");
  const t0 = performance.now(), c0 = process.cpuUsage();
  const model = wrapLanguageModel({ // deno-lint-ignore no-explicit-any
    model: base as any,
    middleware: modelRecorder(log),
  });
  const hooks = governedHooks(core);
  await generateText({ model, tools, prompt: "go", stopWhen: isStepCount(turns + 1), ...hooks });
  await hooks.settle();
  const c = process.cpuUsage(c0), wall = performance.now() - t0;
  log.close();
  const f1 = process.cpuUsage();
  await core.finish({ adapter_result: "success", message: "done" });
  const finished = process.cpuUsage(f1);
  return {
    wall,
    cpu: (c.user + c.system) / 1000,
    fixed: (opened.user + opened.system + finished.user + finished.system) / 1000,
  };
}

async function once(variant: Variant, turns: number, calls: number, dir: string): Promise<Timing & { fixed?: number }> {
  let n = 0;
  const server = await startOpenAiServer(() =>
    n++ < turns
      ? {
        tool_calls: Array.from(
          { length: calls },
          (_, i) => ({ id: `c${n}_${i}`, name: "lookup", arguments: `{"key":"k${n}_${i}"}` }),
        ),
      }
      : { text: "done" }
  );
  const base = createOpenAICompatible({ name: "bench", baseURL: server.url }).chatModel("bench");
  const tools = toAiSdkTools([lookup], { workspace: dir, signal: new AbortController().signal });
  let log: JsonlAppender | null = null;
  try {
    if (variant === "core" || variant === "core-file") return await episodeLoop(variant, base, tools, turns, dir);
    const t0 = performance.now(), c0 = process.cpuUsage();
    if (variant === "bare") {
      await generateText({ model: base, tools, prompt: "go", stopWhen: isStepCount(turns + 1) });
    } else {
      log = new JsonlAppender(join(dir, `model-${variant}-${Date.now()}.jsonl`));
      const governor = await PolicyGovernor.create({
        policies: [variant === "file" ? join(dir, "guard.ts") : benchGuard],
      });
      const model = wrapLanguageModel({ model: base, middleware: modelRecorder(log) });
      const hooks = governedHooks(governor);
      await generateText({ model, tools, prompt: "go", stopWhen: isStepCount(turns + 1), ...hooks });
      await hooks.settle();
      if (governor.steps.length !== turns * calls) throw new Error(`governed ${governor.steps.length} calls`);
    }
    const c = process.cpuUsage(c0);
    return { wall: performance.now() - t0, cpu: (c.user + c.system) / 1000 };
  } finally {
    log?.close();
    await server.close();
  }
}

/** noema's own work per call, without model or network: propose (one in-process policy), decide, record. */
async function hooksAlone(n: number): Promise<number> {
  const governor = await PolicyGovernor.create({
    policies: [{ name: "BenchGuard", version: "1.0", advise: () => undefined }],
  });
  const hooks = governedHooks(governor);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const input = await hooks.experimental_refineToolInput.lookup({ key: `k${i}` });
    const toolCall = { toolCallId: `c${i}`, toolName: "lookup", input };
    await hooks.toolApproval({ toolCall });
    await hooks.onToolExecutionEnd({
      toolCall,
      toolOutput: { type: "tool-result", output: { v: i } },
      toolExecutionMs: 0,
    });
  }
  return (performance.now() - t0) / n;
}

/** Runs the benchmark. */
export async function main(args: string[]): Promise<BenchReport> {
  const turns = Number(flag(args, "turns") ?? 40);
  const calls = Number(flag(args, "calls") ?? 5);
  const runs = Number(flag(args, "runs") ?? 40);
  const warmup = Math.max(1, Number(flag(args, "warmup") ?? 10));
  const tmp = tempDir("noema-bench-llm-");
  writeFileSync(join(tmp.path, "guard.ts"), POLICY);
  try {
    const variants = ["bare", "inline", "file", "core", "core-file"] as const;
    const times: Record<string, (Timing & { fixed?: number })[]> = {};
    for (const v of variants) times[v] = [];
    // Warm-up: full runs, interleaved, not measured. The JIT compiles noema's code (and the SDK's) during
    // the first runs of a process; that is a one-off cost per process, not a cost per call.
    for (let r = 0; r < warmup; r++) for (const v of variants) await once(v, turns, calls, tmp.path);
    for (let r = 0; r < runs; r++) {
      // Interleaved, so drift on a shared machine hits every variant alike.
      for (const v of variants) times[v].push(await once(v, turns, calls, tmp.path));
    }
    const total = turns * calls;
    const med = (v: string, k: keyof Timing) => median(times[v].map((t) => t[k]));
    const bare = med("bare", "cpu");
    const rows: string[][] = [];
    const measures: Measure[] = [];
    let ok = true;
    rows.push(["bare AI SDK loop", fixed(med("bare", "wall"), 1), fixed(bare, 1), "-", "-", "-"]);
    for (
      const [v, label] of [
        ["inline", "noema govern(), policy in-process"],
        ["file", "noema govern(), policy file (worker)"],
        ["core", "noema episode, policy in-process"],
        ["core-file", "noema episode, policy file (worker)"],
      ] as const
    ) {
      const t = med(v, "cpu");
      // Each round runs every variant back to back: judged round by round against that round's bare run, so
      // drift in the machine's speed over the benchmark cancels out (the median of the per-round figures).
      const perCall = median(times[v].map((x, r) => (x.cpu - times.bare[r].cpu) / total));
      const ratio = median(times[v].map((x, r) => x.cpu / times.bare[r].cpu));
      const met = ratio <= 1.2 && perCall <= 2;
      ok &&= met;
      rows.push([label, fixed(med(v, "wall"), 1), fixed(t, 1), fixed(ratio, 2), fixed(perCall, 3), met ? "yes" : "no"]);
      measures.push({
        measure: `${label}: added CPU ms per tool call`,
        value: fixed(perCall, 3),
        baseline: `${fixed(bare / total, 3)} (bare, per call)`,
        ratio: `${fixed(ratio, 2)}×`,
        goal: "≤ 1.2× and ≤ 2 ms",
        met: met ? "yes" : "no",
      });
    }
    const fixedCost = median(times["core"].map((t) => t.fixed ?? 0));
    rows.push(["episode open + finish (fixed, per episode)", "-", fixed(fixedCost, 1), "-", "-", "-"]);
    const alone = median([await hooksAlone(total), await hooksAlone(total), await hooksAlone(total)]);
    const long = median([await hooksAlone(total * 10), await hooksAlone(total * 10)]);
    rows.push([
      `hooks alone, ${total * 10} calls (linear?): ms per call`,
      fixed(long, 3),
      "-",
      "-",
      fixed(long, 3),
      long <= 2 ? "yes" : "no",
    ]);
    rows.push([
      "hooks alone (no model): ms per call",
      fixed(alone, 3),
      "-",
      "-",
      fixed(alone, 3),
      alone <= 2 ? "yes" : "no",
    ]);
    return {
      name: "llm",
      ok,
      measures,
      tables: [{
        title:
          `LLM agent loop: ${turns} turns × ${calls} tool calls (${total} calls), median of ${runs} runs after ${warmup} warm-up runs`,
        columns: ["variant", "wall ms", "CPU ms", "× bare (CPU)", "added CPU ms/call", "goal met"],
        rows,
        notes: [
          "Same scripted OpenAI-compatible server on 127.0.0.1 and same tools; noema adds the governed hooks (propose → policy → decision, record) and model.jsonl.",
          "govern(): the policy governor in memory. episode: the episode core, what `noema run --using llm` does (every call an act step with its events; state flushed at a bounded share of the time); its open + finish is a fixed cost per episode, not counted per call.",
          "Goals are judged on CPU time (this process, server and worker threads included): wall time on a shared machine swings with other load.",
          "The CPU ms column holds medians over the rounds; × bare and added CPU ms/call are the medians of each round's figure against the bare run of the same round (the variants of a round run back to back), so slow drift in the machine's speed cancels out.",
          `Measured after ${warmup} unmeasured runs of each variant: the JIT compiles noema's code during a process's first runs (a one-off cost per process), and per-call cost is judged once most of that is done.`,
        ],
      }],
    };
  } finally {
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
