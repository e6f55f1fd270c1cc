/**
 * The `llm` adapter (`--using llm`): the `act` step runs the governed agent
 * loop in the workspace. Every tool call is put through the run's policies
 * (`adapter.policies`, filled by `noema run` from `--policy` and the task
 * file) and reported in the act's output as `tool_calls` (tool, input,
 * verdict, reason, status, output or error); model calls go to `model.jsonl`
 * in the episode; the final answer becomes the act's outcome and the fact
 * `llm.answer`, token usage the output's `usage` and the fact `llm.usage`.
 *
 * With `adapter.replay` (set by `noema run --replay EPISODE`) the recorded
 * model turns are played back with no network; the tools run again and the
 * policies are consulted again, and a divergence ends the act with a
 * `ReplayDivergence` error that says where.
 *
 * @module
 */
import process from "node:process";
import type { ActResult, AdapterPlugin } from "../plugins/api.ts";
import { Redactor } from "../runtime/redact.ts";
import { runLlmAgent } from "./agent.ts";
import { parseLlmConfig } from "./config.ts";
import { PolicyGovernor } from "./policy_governor.ts";
import { apiKeyEnv } from "./provider.ts";
import { readModelLog } from "./replay_model.ts";

function excerpt(value: unknown, max = 2000): unknown {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? "";
  return text.length <= max ? value : `${text.slice(0, max)}… [${text.length - max} more characters]`;
}

const llm: AdapterPlugin = {
  name: "llm",
  version: "1.0",
  api: "1.0",
  kind: "llm",
  create(context) {
    const config = parseLlmConfig(context.config);
    const keyEnv = apiKeyEnv(config);
    const redactor = new Redactor({ secrets: [...context.secrets, ...(keyEnv ? [keyEnv] : [])] });
    const turns = config.replay ? readModelLog(config.replay) : undefined;
    return {
      async act(request): Promise<ActResult> {
        if (request.step.kind !== "act") {
          return { status: "ok", outcome: `nothing to do for a ${request.step.kind} step` };
        }
        const workspace = request.workspace ?? process.cwd();
        const governor = await PolicyGovernor.create({
          policies: config.policies ?? [],
          task: request.task,
          workspace,
        });
        let r;
        try {
          r = await runLlmAgent({
            task: request.task,
            config,
            governor,
            workspace,
            episodeDir: context.episode_dir,
            redactor,
            replay: turns,
            signal: request.signal,
          });
        } finally {
          governor.close();
        }
        const tool_calls = governor.steps.map((s) => ({
          step: s.step_id,
          tool: s.action.tool,
          command: s.action.command,
          input: s.decision.input,
          verdict: s.decision.verdict,
          reason: s.decision.reason,
          policy_id: s.decision.policy_id,
          status: s.result?.status ?? (s.decision.verdict === "deny" ? "skipped" : "pending"),
          output: s.result?.output === undefined ? undefined : excerpt(s.result.output),
          error: s.result?.error,
          duration_ms: s.result?.duration_ms,
        }));
        const output = { status: r.status, answer: r.text, turns: r.total_turns, usage: r.usage, tool_calls };
        const facts = [{ key: "llm.usage", value: r.usage }];
        if (r.status === "done") {
          return {
            status: "ok",
            outcome: r.text.split("\n")[0].slice(0, 200) || "done",
            output,
            facts: [{ key: "llm.answer", value: r.text }, ...facts],
            artifacts: [{ path: "model.jsonl", kind: "model" }],
          };
        }
        const error = r.status === "paused"
          ? {
            type: "LlmApprovalRequired",
            message: `tool call ${r.pending[0].tool} needs approval: ${r.pending[0].reason}`,
          }
          : r.error ?? { type: "LlmError", message: "the agent stopped" };
        return { status: "error", outcome: error.message.slice(0, 200), output, error, facts };
      },
    };
  },
};

export default llm;
