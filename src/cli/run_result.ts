/**
 * How `noema run`, `resume` and `approve|reject --resume` report a run's
 * result: one line (or `--json`), plus why it was blocked: a policy's veto
 * (its reason) kept apart from a policy failure (the error and where it was
 * thrown), and the run's error.
 *
 * @module
 */
import { calledAs } from "../called_as.ts";
import { existsSync } from "node:fs";
import process from "node:process";
import { EXIT } from "../errors.ts";
import { continuable } from "../llm/run_flags.ts";
import { finalAnswer } from "../read/answer.ts";
import { episodePaths } from "../read/episode.ts";
import type { RunResult } from "../runtime/engine.ts";
import { readJsonFile } from "../store/json_file.ts";
import { readJsonl } from "../store/jsonl.ts";
import type { CliContext } from "./context.ts";
import { indentedLines, neutralize, oneLine } from "./output.ts";
import { stderrTail } from "../read/stderr_tail.ts";
import { decisionText, type StepDecision, StepDecisions } from "../read/step_decisions.ts";

/** The enforced governance decision that blocked an action. */
export interface BlockInfo {
  /** `veto`: a policy vetoed the action; `policy_failure`: a policy failed and fail_closed blocked it. */
  kind: "veto" | "policy_failure";
  /** The rule, e.g. `policy.veto:SqlGuard@1.0` or `policy.failure:Boom@1.0`. */
  rule: string;
  /** The policy. */
  policy_id: string | null;
  /** The step whose action was blocked. */
  step_id: string | null;
  /** The veto's reason (the policy's advice), or the failure's description. */
  message: string;
  /** For a failure: the error, and where it was thrown (`file.ts:LINE:COL`) when known. */
  error: { type: string; message: string; at: string | null } | null;
}

/** Why a run ended as it did, read back from its artifacts. */
export interface RunExplanation {
  /**
   * The last enforced block (veto or policy failure) that stopped an action, or null: a veto that asked for a
   * human's approval and was approved stopped nothing (the action ran); a rejected one is kept.
   */
  blocked: BlockInfo | null;
  /** `outcomes.error` of state.json, or null. */
  error: { type: string; message: string } | null;
  /** The terminate event's message, or null. */
  message: string | null;
  /**
   * An agent's final answer: the terminate event's `answer` (for a run recorded before there was one, the
   * message of an `llm` run that ended ok), or null.
   */
  answer: string | null;
  /** The exit code of the last program an action ran (act event `exit_code`), or null. */
  program_exit_code: number | null;
  /**
   * The last non-blank lines of the stderr of the last program an action ran, when that action failed (as
   * recorded: masked, an excerpt), at most {@link RESULT_STDERR_LINES}, each cut as `noema view` cuts it; empty
   * otherwise.
   */
  program_stderr_tail: string[];
  /** An agent run that a failure stopped: `noema run --continue` can pick it up. */
  continuable: boolean;
  /** A human's decision on the blocked step (it waited for approval and was rejected), or null. */
  rejection: StepDecision | null;
  /** Vetoes recorded but not enforced (`--governance audit`, a rule set in audit mode): what would have been blocked. */
  would_vetoes: number;
}

const rec = (x: unknown): Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x) ? x as Record<string, unknown> : {};
const str = (x: unknown): string | null => (typeof x === "string" ? x : null);

/** The phases of the events that may explain a run (wherever the key stands in the line). */
const PHASES = /"phase"\s*:\s*"(terminate|direction|act|governance)"/g;

/** Whether an event line may matter to {@link explainRun}, decided before parsing it. */
function mayExplain(text: string): boolean {
  if (text.includes('"run.checkpoint"') || text.includes('"run.resume"')) return true; // a human's decision
  for (const [, phase] of text.matchAll(PHASES)) {
    if (phase === "terminate") return true;
    if (phase === "direction" && text.includes("policy_failure")) return true;
    if (phase === "act" && text.includes('"exit_code"')) return true;
    if (phase === "governance" && text.includes('"veto"')) return true;
  }
  return false;
}

/** Whether the resume event `p` consumed an approval of the step `b` blocked (its veto asked for one). */
function approvedAt(decisions: StepDecisions, b: BlockInfo, p: Record<string, unknown>): boolean {
  const d = b.step_id === null ? undefined : decisions.of(b.step_id);
  return d?.decision === "approved" && d.checkpoint_id === p.checkpoint_id;
}

/** How many of a failed program's last stderr lines the run's result shows (`noema view` shows more). */
const RESULT_STDERR_LINES = 2;

/** A line that cannot explain the run: not parsed (a 10,000-step run has 30,000 lines, few that matter). */
const parseIfExplains = (text: string): unknown => mayExplain(text) ? JSON.parse(text) : {};

/**
 * Reads why a run ended: the last enforced veto or policy failure from
 * `events.jsonl`, the terminate message, and `outcomes.error` of `state.json`.
 *
 * @example
 * ```ts
 * import { explainRun } from "./run_result.ts";
 * explainRun("/tmp/.noema/episodes/ep_1").blocked?.message;
 * ```
 */
export function explainRun(dir: string): RunExplanation {
  const paths = episodePaths(dir);
  let blocked: BlockInfo | null = null, message: string | null = null, programExit: number | null = null;
  let answer: string | null = null, stderr: string[] = [], wouldVetoes = 0;
  const atByPolicy = new Map<string, string>();
  const decisions = new StepDecisions();
  if (existsSync(paths.events)) {
    for (const entry of readJsonl(paths.events, { parse: parseIfExplains, noFollow: true })) {
      if (entry.problem) continue;
      const e = entry.value, p = rec(e.payload);
      decisions.add(e);
      if (blocked !== null && e.event_type === "run.resume" && approvedAt(decisions, blocked, rec(e.payload))) {
        blocked = null; // the veto only asked for a human's approval, which was given: the action ran
      }
      if (e.phase === "direction" && p.reason === "policy_failure") {
        const at = str(rec(p.error).at);
        if (at) atByPolicy.set(String(p.policy_id ?? p.policy), at);
      }
      if (e.phase === "terminate") [message, answer] = [str(p.message), str(p.answer)];
      if (e.phase === "act" && "exit_code" in p) {
        programExit = typeof p.exit_code === "number" ? p.exit_code : null;
        // Blank lines say nothing under the error: the last lines that hold text.
        const tail = p.result_status === "error" ? stderrTail(rec(p.output).stderr)?.lines ?? [] : [];
        stderr = tail.filter((l) => l.trim() !== "").slice(-RESULT_STDERR_LINES);
      }
      if (e.phase !== "governance" || p.decision !== "veto") continue;
      if (p.enforced === false) {
        wouldVetoes++; // recorded, not enforced: it blocked nothing
        continue;
      }
      const rule = str(p.rule_id) ?? str(p.rule) ?? "";
      const failure = rule.startsWith("policy.failure:");
      const err = rec(p.error);
      const policyId = str(p.policy_id);
      blocked = {
        kind: failure ? "policy_failure" : "veto",
        rule,
        policy_id: policyId,
        step_id: str(p.step_id),
        message: str(p.message) ?? "",
        error: failure
          ? {
            type: str(err.type) ?? "Error",
            message: str(err.message) ?? "",
            at: str(err.at) ?? atByPolicy.get(policyId ?? "") ?? null,
          }
          : null,
      };
    }
  }
  let error: RunExplanation["error"] = null, using: unknown = null, status: unknown = null;
  try {
    const state = readJsonFile(paths.state, paths.state, { noFollow: true });
    const e = rec(rec(state.outcomes).error);
    if (typeof e.message === "string") error = { type: str(e.type) ?? "Error", message: e.message };
    [using, status] = [rec(state.episode).using, rec(state.outcomes).status];
  } catch {
    // an unreadable state.json is for noema validate to report
  }
  return {
    blocked,
    error,
    message,
    answer: finalAnswer(answer, message, using, status),
    program_exit_code: programExit,
    program_stderr_tail: stderr,
    continuable: error !== null && continuable(using, error.type),
    rejection: blocked?.step_id && decisions.of(blocked.step_id)?.decision === "rejected"
      ? decisions.of(blocked.step_id)!
      : null,
    would_vetoes: wouldVetoes,
  };
}

/** Options of {@link printRunResult}. */
export interface PrintRunOptions {
  /** Print one JSON object. */
  json?: boolean;
  /** Print only the episode id. */
  quiet?: boolean;
  /** The `--root` given, repeated in the `view:` hint. */
  root?: string;
  /** The run was interrupted (Ctrl-C, SIGTERM): exit 130. */
  interrupted?: boolean;
}

/**
 * Prints a run's result and sets the exit code (0 ok, 1 error, 3 vetoed,
 * 4 paused, 130 interrupted), and an agent run's final answer. `--json`
 * prints `{episode_id, episode_dir, status, outcome, exit_code, blocked,
 * error, program_exit_code, message, answer}` (plus `checkpoint_id` and
 * `pending` for a paused run): `message` is the run's final message, `answer`
 * an agent's final answer or null.
 *
 * @example
 * ```ts
 * // printRunResult(ctx, await run("Say hello"), { json: true });
 * ```
 */
export function printRunResult(ctx: CliContext, result: RunResult, options: PrintRunOptions = {}): void {
  const { out } = ctx;
  const c = out.color;
  const exitCode = options.interrupted && result.status !== "ok" ? EXIT.INTERRUPTED : result.exit_code;
  if (options.quiet) {
    out.line(result.episode_id);
    if (exitCode !== EXIT.OK) process.exitCode = exitCode;
    return;
  }
  const why = explainRun(result.episode_dir);
  if (options.json) {
    out.json({
      episode_id: result.episode_id,
      episode_dir: result.episode_dir,
      status: result.status,
      outcome: result.outcome,
      exit_code: exitCode,
      ...(result.checkpoint_id ? { checkpoint_id: result.checkpoint_id, pending: result.pending } : {}),
      blocked: why.blocked,
      error: why.error,
      program_exit_code: why.program_exit_code,
      message: why.message,
      answer: why.answer,
    });
  } else if (result.status === "pending") {
    out.line(`${result.episode_id}  ${c.yellow("waiting for approval")}  ${oneLine(result.pending?.reason ?? "")}`);
    const at = result.checkpoint_id ? ` --checkpoint ${result.checkpoint_id}` : "";
    out.line(
      c.dim(
        `  decide: ${calledAs()} approve ${result.episode_id}${at} --resume   |   ` +
          `${calledAs()} reject ${result.episode_id}${at} --resume`,
      ),
    );
  } else {
    const color = result.status === "ok" ? c.green : result.status === "vetoed" ? c.yellow : c.red;
    out.line(`${result.episode_id}  ${color(result.status)}  outcome=${result.outcome}`);
    if (why.answer !== null) { for (const line of indentedLines(why.answer)) out.line(line); }
    const b = why.blocked;
    if (b && result.status === "vetoed") {
      if (why.rejection !== null) out.line(`  ${c.yellow(oneLine(decisionText(why.rejection)))}`); // a note is one line
      else if (b.kind === "veto") {
        out.line(`  ${c.yellow("vetoed by")} ${neutralize(b.policy_id ?? b.rule)}: ${oneLine(b.message)}`);
      } else {
        const e = b.error!;
        out.line(
          `  ${c.red("policy failed")} ${neutralize(b.policy_id ?? b.rule)}: ${oneLine(`${e.type}: ${e.message}`)}${
            e.at ? ` (at ${neutralize(e.at)})` : ""
          }; fail_closed blocked the action (not a veto)`,
        );
      }
    } else if (why.error && result.status !== "ok") {
      out.line(`  ${c.red("error")} ${oneLine(`${why.error.type}: ${why.error.message}`)}`);
      for (const line of why.program_stderr_tail) out.line(`  ${c.dim("stderr:")} ${oneLine(line)}`);
      if (why.continuable) out.line(c.dim(`  continue: ${calledAs()} run --continue ${result.episode_id}`));
    }
    if (why.would_vetoes > 0) {
      // Audit mode enforces nothing: what it would have blocked is said here, not only in list and view.
      const n = why.would_vetoes;
      out.line(
        `  ${c.yellow("audit:")} ${n} veto${n === 1 ? "" : "es"} not enforced (would have blocked ${
          n === 1 ? "an action" : `${n} actions`
        })`,
      );
    }
    out.line(c.dim(`  view: ${calledAs()} view ${result.episode_id}${options.root ? ` --root ${options.root}` : ""}`));
  }
  if (exitCode !== EXIT.OK) process.exitCode = exitCode;
}
