/**
 * `noema policy test FILE.ts --command CMD | --action JSON | --task TEXT
 * [--result JSON|TEXT]`: what a policy says about one action (and, with
 * `--result`, about its result: the policy's `review`), as JSON. The verdicts come from a
 * real, throwaway episode (in a temp root, removed afterwards): the policy
 * sees the state a real run builds, and the action is proposed by one `act`
 * step. Nothing is executed: the adapter only looks like the one named
 * (`shell` for `--command`) and skips every action, or, with `--result`,
 * reports that result for it.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { Option } from "@commander-js/extra-typings";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT } from "../../errors.ts";
import type { ActResult, AdapterPlugin } from "../../plugins/api.ts";
import { readEvents } from "../../read/episode.ts";
import { run } from "../../drivers.ts";
import { FAILURE_POLICIES, MAX_POLICY_TIMEOUT_MS } from "../../runtime/settings.ts";
import { INTUITION_MODES } from "../../schema/state.ts";
import { type CliContext, examples } from "../context.ts";
import { usageError } from "../errors.ts";
import { numberOption } from "../run_options.ts";
import { registerPolicyBacktest } from "./policy_backtest.ts";

/** The action a policy test proposes. */
export interface TestAction {
  /** The action kind (`shell` for `--command`, else `adapter`). */
  kind: string;
  /** The adapter name; the action's tool is `adapter:<name>`. */
  adapter: string;
  /** The action's input, e.g. `{ command: "rm -rf /" }`. */
  input: Record<string, unknown>;
}

/**
 * Builds the action from the flags: `--command` (a shell command, as the
 * shell adapter would run it) or `--action` (JSON: `{"input": {...}, "tool":
 * "adapter:NAME", "kind": "..."}`, or just the input object).
 *
 * @example
 * ```ts
 * import { testAction } from "./policy.ts";
 * testAction({ command: "rm -rf /" }); // { kind: "shell", adapter: "shell", input: { command: "rm -rf /" } }
 * ```
 */
export function testAction(opts: { command?: string; action?: string }): TestAction {
  if (opts.command !== undefined && opts.action !== undefined) {
    throw usageError("--command and --action cannot be used together");
  }
  if (opts.command !== undefined) return { kind: "shell", adapter: "shell", input: { command: opts.command } };
  if (opts.action === undefined) return { kind: "adapter", adapter: "minimal", input: {} };
  let value: unknown;
  try {
    value = JSON.parse(opts.action);
  } catch (e) {
    throw usageError(`--action: invalid JSON: ${(e as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw usageError("--action must be a JSON object: the action's input, or {input, tool, kind}");
  }
  const o = value as Record<string, unknown>;
  if (!("input" in o)) return { kind: "adapter", adapter: "minimal", input: o };
  if (typeof o.input !== "object" || o.input === null || Array.isArray(o.input)) {
    throw usageError("--action: input must be a JSON object");
  }
  const tool = typeof o.tool === "string" ? o.tool.replace(/^adapter:/, "") : "minimal";
  if (!/^[A-Za-z0-9][\w.-]*$/.test(tool)) {
    throw usageError(`--action: tool must be adapter:NAME, got ${String(o.tool)}`);
  }
  const kind = typeof o.kind === "string" ? o.kind : tool === "shell" ? "shell" : "adapter";
  return { kind, adapter: tool, input: o.input as Record<string, unknown> };
}

/**
 * The result `--result` gives the action: a JSON object `{status?, output?, error?}` (status `ok` unless
 * said), any other JSON value or a text that is not JSON: the output of a call that succeeded.
 *
 * @example
 * ```ts
 * import { testResult } from "./policy.ts";
 * testResult("key sk-…"); // { status: "ok", outcome: "noema policy test: given result", output: "key sk-…" }
 * ```
 */
export function testResult(text: string): ActResult {
  let value: unknown = text;
  try {
    value = JSON.parse(text);
  } catch {
    // not JSON: the output text itself
  }
  const base = { status: "ok" as const, outcome: "noema policy test: given result" };
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ...base, output: value };
  const o = value as Record<string, unknown>;
  if (!("output" in o) && !("status" in o) && !("error" in o)) return { ...base, output: o };
  const status = o.status ?? "ok";
  if (status !== "ok" && status !== "error" && status !== "skipped") {
    throw usageError(`--result: status must be "ok", "error" or "skipped", got ${JSON.stringify(status)}`);
  }
  const error = o.error as { type?: unknown; message?: unknown } | undefined;
  if (error !== undefined && (typeof error !== "object" || error === null || typeof error.message !== "string")) {
    throw usageError("--result: error must be an object {type, message}");
  }
  return {
    ...base,
    status,
    output: o.output,
    ...(error ? { error: { type: String(error.type ?? "Error"), message: error.message as string } } : {}),
  };
}

/** An adapter that has the name and kind of the real one but never acts (it reports `result`, when given). */
function inertAdapter(action: TestAction, result?: ActResult): AdapterPlugin {
  return {
    name: action.adapter,
    version: "policy-test",
    kind: action.kind,
    create: () => ({ act: () => result ?? { status: "skipped", outcome: "noema policy test: not executed" } }),
  };
}

/** What `noema policy test` prints. */
export interface PolicyTestResult {
  policy_file: string;
  task: string;
  action: { kind: string; tool: string; input: Record<string, unknown> };
  /** `allowed`, `vetoed`, `failed` (the policy threw, timed out or returned a bad verdict) or `needs_approval`. */
  result: "allowed" | "vetoed" | "failed" | "needs_approval";
  /** Each policy's verdict on the action (direction events). */
  verdicts: Record<string, unknown>[];
  /** The governance decision on the action. */
  decision: Record<string, unknown> | null;
  /**
   * With `--result`: what the policy's `review` said about the result. `result`: `passed`, `hinted`,
   * `redacted`, `blocked` or `failed` (the review threw, timed out or returned a bad verdict: withheld under
   * fail_closed); `shown`: what the agent would get instead of the result (redacted); `verdicts` and `decision`
   * as above, from the review's events.
   */
  review?: {
    result: "passed" | "hinted" | "redacted" | "blocked" | "failed";
    verdicts: Record<string, unknown>[];
    decision: Record<string, unknown> | null;
    shown?: unknown;
  };
}

const pick = (o: Record<string, unknown>, keys: string[]) =>
  Object.fromEntries(keys.filter((k) => k in o).map((k) => [k, o[k]]));

/**
 * Runs the throwaway episode and gathers what the policy said.
 *
 * @example
 * ```ts
 * // await testPolicy("no-force-push.ts", "push", testAction({ command: "git push --force" }), {});
 * ```
 */
export async function testPolicy(
  file: string,
  task: string,
  action: TestAction,
  settings: {
    intuition_mode?: (typeof INTUITION_MODES)[number];
    failure_policy?: (typeof FAILURE_POLICIES)[number];
    policy_timeout_ms?: number;
  },
  actResult?: ActResult,
): Promise<PolicyTestResult> {
  const root = mkdtempSync(join(tmpdir(), "noema-policy-test-"));
  try {
    const result = await run(task, {
      root,
      using: inertAdapter(action, actResult),
      policies: [file],
      steps: [{ kind: "act", description: task, inputs: action.input }],
      governance: "enforce",
      learn_mode: "off",
      ...settings,
    });
    const verdicts: Record<string, unknown>[] = [];
    let decision: Record<string, unknown> | null = null;
    const reviewVerdicts: Record<string, unknown>[] = [];
    let reviewDecision: Record<string, unknown> | null = null;
    let shown: unknown = undefined;
    for (const e of readEvents(result.episode_dir)) {
      const p = e.payload as Record<string, unknown>;
      if (p.stage === "review") {
        if (e.phase === "direction") {
          reviewVerdicts.push(
            pick(p, ["policy", "kind", "advice", "confidence", "threshold", "status", "reason", "redaction", "error"]),
          );
        }
        if (e.phase === "governance") {
          reviewDecision = pick(p, ["decision", "rule", "message", "policy_id", "enforced", "hints", "error"]);
          shown = p.shown;
        }
        continue;
      }
      if (e.phase === "direction") {
        verdicts.push(
          pick(p, [
            "policy",
            "kind",
            "advice",
            "confidence",
            "threshold",
            "status",
            "reason",
            "patch",
            "requires_approval",
            "error",
          ]),
        );
      }
      if (e.phase === "governance") {
        decision = pick(p, ["decision", "rule", "message", "policy_id", "enforced", "error"]);
      }
    }
    const failed = String(decision?.rule ?? "").startsWith("policy.failure:");
    return {
      policy_file: file,
      task,
      action: { kind: action.kind, tool: `adapter:${action.adapter}`, input: action.input },
      result: result.status === "pending"
        ? "needs_approval"
        : failed && decision?.decision === "veto"
        ? "failed"
        : decision?.decision === "veto"
        ? "vetoed"
        : "allowed",
      verdicts,
      decision,
      ...(actResult && reviewVerdicts.length > 0
        ? {
          review: {
            result: reviewOutcome(reviewDecision),
            verdicts: reviewVerdicts,
            decision: reviewDecision,
            ...(shown !== undefined ? { shown } : {}),
          },
        }
        : {}),
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** The review's result, from its governance decision. */
function reviewOutcome(d: Record<string, unknown> | null): NonNullable<PolicyTestResult["review"]>["result"] {
  if (String(d?.rule ?? "").startsWith("review.failure:") && d?.decision === "block") return "failed";
  const by = { block: "blocked", redact: "redacted", hint: "hinted" } as const;
  return by[d?.decision as keyof typeof by] ?? "passed";
}

/** The exit code of each result. */
const RESULT_EXIT = { allowed: EXIT.OK, vetoed: EXIT.VETOED, failed: EXIT.ERROR, needs_approval: EXIT.PAUSED } as const;

/** Registers `noema policy` and its `test` subcommand. */
export function registerPolicy(program: CommandUnknownOpts, ctx: CliContext): void {
  const policy = program.command("policy").summary("work with policy plugins").description(
    "Work with policy plugins. 'noema policy test' shows what a policy says about an action; 'noema policy\n" +
      "backtest' what a policy or rules change would have decided about the recorded actions.",
  ).addHelpText(
    "after",
    examples(
      ['noema policy test my-policy.ts --command "rm -rf /"', "its verdict on a shell command, as JSON"],
      ["noema init policy my-policy", "write a new policy and its test"],
    ),
  );
  policy
    .command("test")
    .summary("print a policy's verdict on an action, as JSON")
    .description(
      "Run a throwaway episode (in a temp root, removed afterwards) whose one act step proposes the action, with\n" +
        "this policy, and print the verdicts and the governance decision as JSON. The policy sees the state a real\n" +
        "run builds. Nothing is executed: the adapter has the real one's name and kind but skips every action.",
    )
    .argument("<file>", "the policy plugin (.ts)")
    .option("-c, --command <command>", 'a shell command, as the shell adapter would run it (input {"command": …})')
    .option("-a, --action <json>", 'the action as JSON: its input object, or {"input": {…}, "tool": "adapter:NAME"}')
    .option("-t, --task <text>", "the episode's task (also the step's description)", "policy test")
    .option(
      "-r, --result <json-or-text>",
      "the action's result, for the policy's review: its output as text, or JSON {status, output, error}",
    )
    .addOption(
      new Option("--intuition-mode <mode>", "what verdicts may do (default interventive)").choices(INTUITION_MODES),
    )
    .addOption(new Option("--failure-policy <policy>", "when the policy fails (default fail_closed)").choices(
      FAILURE_POLICIES,
    ))
    .addOption(
      new Option("--policy-timeout <ms>", "longest time the policy may take, in advise and in review (default 5000)")
        .argParser(numberOption("--policy-timeout", 1, MAX_POLICY_TIMEOUT_MS, true)),
    )
    .option("--json", "print JSON (the output is JSON in any case; accepted like every command's --json)")
    .addHelpText(
      "after",
      examples(
        ['noema policy test no-force-push.ts --command "rm -rf /"', "vetoed: exit 3"],
        [
          'noema policy test no-force-push.ts --command "git push --force"',
          "an intervention: allowed (exit 0), the patch in verdicts",
        ],
        ['noema policy test sql-guard.ts --action \'{"sql": "DROP TABLE users"}\'', "an action input as JSON"],
        ['noema policy test path-risk.ts --task "clean up" --command "rm -rf /tmp/x"', "with a task"],
        [
          'noema policy test plugins/policies/secret-scanner.ts --command "cat .env" --result "KEY=sk-…"',
          "its review of a result: redacted (exit 0), what the agent gets in review.shown",
        ],
      ) +
        '\nOutput: {"policy_file", "task", "action": {kind, tool, input}, "result", "verdicts": [{policy, kind,\n' +
        'advice, confidence, threshold, status, reason, patch, requires_approval, error}], "decision": {decision,\n' +
        'rule, message, policy_id, enforced, error}}; with --result, also "review": {result (passed, hinted,\n' +
        "redacted, blocked, failed), verdicts, decision, shown}.\n" +
        "Exit codes: 0 allowed, 1 the policy failed (threw, timed out, bad verdict; in advise or review), 2 usage\n" +
        "or a plugin that cannot load, 3 vetoed or its result blocked, 4 needs approval.\n",
    )
    .action(async (file, opts) => {
      const action = testAction(opts);
      const given = opts.result === undefined ? undefined : testResult(opts.result);
      const result = await testPolicy(file, opts.task, action, {
        intuition_mode: opts.intuitionMode,
        failure_policy: opts.failurePolicy,
        policy_timeout_ms: opts.policyTimeout,
      }, given);
      ctx.out.json(result);
      const review = result.review?.result;
      ctx.exitCode = result.result !== "allowed"
        ? RESULT_EXIT[result.result]
        : review === "failed"
        ? EXIT.ERROR
        : review === "blocked"
        ? EXIT.VETOED
        : EXIT.OK;
    });
  registerPolicyBacktest(policy, ctx);
}
