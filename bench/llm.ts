/**
 * What noema adds per tool call to an AI SDK agent loop, on the same
 * scripted OpenAI-compatible server (127.0.0.1, tests/helpers/openai_server.ts):
 *
 * - baseline: the bare AI SDK loop (`generateText` with the tools, no hooks);
 * - noema: the same loop with the governed hooks (each call proposed to one
 *   policy and recorded) and every model call recorded in `model.jsonl`;
 *   once with the policy in-process, once as a policy file (worker thread,
 *   the default for files).
 *
 * Each run is `--turns` model turns of `--calls` parallel tool calls of a
 * cheap in-memory tool, then a final answer. Goal: ≤ 1.2× the baseline and
 * ≤ 2 ms added per tool call.
 *
 *     bun bench/llm.ts [--turns 40] [--calls 5] [--runs 7]
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, isStepCount, wrapLanguageModel } from "ai";
import { toAiSdkTools } from "../src/llm/ai_tools.ts";
import { governedHooks } from "../src/llm/hooks.ts";
import { modelRecorder } from "../src/llm/model_log.ts";
import { PolicyGovernor } from "../src/llm/policy_governor.ts";
import type { LlmTool } from "../src/llm/tools/tool.ts";
import { JsonlAppender } from "../src/store/jsonl.ts";
import { startOpenAiServer } from "../tests/helpers/openai_server.ts";
import { type BenchReport, fixed, flag, type Measure, runStandalone, tempDir } from "./lib.ts";

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

async function once(variant: "bare" | "inline" | "file", turns: number, calls: number, dir: string): Promise<Timing> {
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
    const t0 = performance.now(), c0 = process.cpuUsage();
    if (variant === "bare") {
      await generateText({ model: base, tools, prompt: "go", stopWhen: isStepCount(turns + 1) });
    } else {
      log = new JsonlAppender(join(dir, `model-${variant}-${Date.now()}.jsonl`));
      const governor = await PolicyGovernor.create({
        policies: [
          variant === "file" ? join(dir, "guard.ts") : {
            name: "BenchGuard",
            version: "1.0",
            advise: (s) =>
              String(s.action.input.key ?? "").includes("forbidden") ? { kind: "veto", advice: "no" } : undefined,
          },
        ],
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

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Runs the benchmark. */
export async function main(args: string[]): Promise<BenchReport> {
  const turns = Number(flag(args, "turns") ?? 40);
  const calls = Number(flag(args, "calls") ?? 5);
  const runs = Number(flag(args, "runs") ?? 7);
  const tmp = tempDir("noema-bench-llm-");
  writeFileSync(join(tmp.path, "guard.ts"), POLICY);
  try {
    const times: Record<string, Timing[]> = { bare: [], inline: [], file: [] };
    await once("bare", 3, calls, tmp.path); // warm-up
    await once("inline", 3, calls, tmp.path);
    for (let r = 0; r < runs; r++) {
      // Interleaved, so drift on a shared machine hits every variant alike.
      for (const v of ["bare", "inline", "file"] as const) times[v].push(await once(v, turns, calls, tmp.path));
    }
    const total = turns * calls;
    const med = (v: string, k: keyof Timing) => median(times[v].map((t) => t[k]));
    const bare = med("bare", "cpu");
    const rows: string[][] = [];
    const measures: Measure[] = [];
    let ok = true;
    rows.push(["bare AI SDK loop", fixed(med("bare", "wall"), 1), fixed(bare, 1), "-", "-", "-"]);
    for (
      const [v, label] of [["inline", "noema, policy in-process"], ["file", "noema, policy file (worker)"]] as const
    ) {
      const t = med(v, "cpu");
      const perCall = (t - bare) / total;
      const ratio = t / bare;
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
    const alone = median([await hooksAlone(total), await hooksAlone(total), await hooksAlone(total)]);
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
        title: `LLM agent loop: ${turns} turns × ${calls} tool calls (${total} calls), median of ${runs} runs`,
        columns: ["variant", "wall ms", "CPU ms", "× bare (CPU)", "added CPU ms/call", "goal met"],
        rows,
        notes: [
          "Same scripted OpenAI-compatible server on 127.0.0.1 and same tools; noema adds the governed hooks (propose → policy → decision, record) and model.jsonl.",
          "Goals are judged on CPU time (this process, server and worker threads included): wall time on a shared machine swings with other load.",
        ],
      }],
    };
  } finally {
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
