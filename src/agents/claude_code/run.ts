/**
 * `noema run "<task>" --using claude-code`: runs the real Claude Code
 * (`claude -p`) in the workspace, with generated `--settings` that register
 * `noema hook claude-code` for its tool calls, so every call goes through
 * the episode's policies. The episode exists before claude starts; when
 * claude stops, the episode is finished (verification, summary, manifest)
 * with claude's exit code and terminal reason as the adapter result. A call
 * that needs approval is deferred: claude exits, the episode pauses (exit
 * 4), and `noema approve|reject ID --resume` continues the same claude
 * session (`claude -p --resume`), where the call is asked again.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../../errors.ts";
import type { RunResult } from "../../runtime/engine.ts";
import type { ResumeOptions } from "../../runtime/resume.ts";
import type { RunOptions } from "../../runtime/run.ts";
import { childEnv } from "../../plugins/process.ts";
import { resolveRoot } from "../../store/layout.ts";
import type { EpisodeHandle, FinishOptions } from "../core.ts";
import { abortEnd, type Driver, pausedCheckpoint, pausedResult, startEvent } from "../driver.ts";
import { attachEpisode, openEpisode } from "../episodes.ts";
import { followEvents } from "../progress.ts";
import { findClaude } from "./binary.ts";
import { hookCommand, hookSettings, RUN_EVENTS } from "./settings.ts";
import { defaultTranscriptPath, readCursor, recordTranscriptTurns } from "./model_turns.ts";
import { usageMetrics } from "../../runtime/cost/metrics.ts";
import { PriceTable } from "../../runtime/cost/prices.ts";
import * as v from "valibot";
import { textHead } from "../../text_head.ts";
import { calledAs } from "../../called_as.ts";

/** How a claude session of an episode is started. */
interface Session {
  bin: string;
  sessionId: string;
  workspace: string;
  root: string;
  episodeId: string;
  dir: string;
  extraArgs: readonly string[];
  /** The user's model prices (`noema.jsonc` `prices`), recorded with the adapter settings. */
  prices?: PriceTable;
}

/** What claude's `--output-format json` result says (the fields noema reads). */
interface ClaudeResult {
  code: number | null;
  json: Record<string, unknown> | null;
  stderr: string;
}

function settingsFor(s: Session): string {
  const command = hookCommand(["--root", s.root, "--episode", s.episodeId, "--print", "--grant", "--no-finish"]);
  return JSON.stringify({ hooks: hookSettings(command, RUN_EVENTS) });
}

function runClaude(s: Session, first: string[], signal?: AbortSignal): Promise<ClaudeResult> {
  const args = [...first, "--output-format", "json", "--settings", settingsFor(s), ...s.extraArgs];
  // The hook calls' resident server (src/agents/server/) listens in a directory of this run: removing it
  // when claude is done stops the server.
  const servers = mkdtempSync(join(tmpdir(), "noema-hooks-"));
  // No noema secret reaches claude (its tools inherit its environment): the signing key stays here.
  const env = childEnv({ ...process.env, NOEMA_HOOK_SERVER_DIR: servers });
  const child = spawn(s.bin, args, { cwd: s.workspace, stdio: ["ignore", "pipe", "pipe"], env });
  child.on("close", () => rmSync(servers, { recursive: true, force: true }));
  let out = "", err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err = (err + d).slice(-20_000)));
  const onAbort = () => child.kill("SIGTERM");
  signal?.addEventListener("abort", onAbort, { once: true });
  return new Promise((resolveRun, reject) => {
    child.on("error", (e) => reject(new NoemaError("claude_failed", `cannot start ${s.bin}: ${e.message}`)));
    child.on("close", (code) => {
      signal?.removeEventListener("abort", onAbort);
      let json: Record<string, unknown> | null = null;
      try {
        const last = out.trim().split("\n").pop() ?? "";
        json = last ? JSON.parse(last) : null;
      } catch {
        json = null;
      }
      resolveRun({ code, json, stderr: err.trim() });
    });
  });
}

/**
 * The adapter result, message and final answer of a finished claude process:
 * claude's `result` text is the run's answer (`run`, `view`, `report` show it).
 *
 * @example
 * ```ts
 * import { claudeEnd } from "./run.ts";
 * claudeEnd({ code: 0, json: { result: "Done.", terminal_reason: "completed" }, stderr: "" }, false).answer; // "Done."
 * ```
 */
export function claudeEnd(r: ClaudeResult, aborted: boolean): FinishOptions {
  const reason = typeof r.json?.terminal_reason === "string" ? r.json.terminal_reason : null;
  const result = typeof r.json?.result === "string" ? r.json.result : "";
  const text = textHead(result, 500);
  if (aborted) {
    return { adapter_result: "error", error: { type: "Aborted", message: "the run was interrupted" } };
  }
  if (r.code !== 0 || r.json === null) {
    // Claude Code's own reason, where it gave one: its result text (`Not logged in · Please run /login`, an API
    // error), else the tail of its stderr.
    const tail = r.stderr.split("\n").slice(-3).join(" ");
    const why = textHead(result.trim() || tail, 500) || `exit code ${r.code}`;
    const at = reason !== null && reason !== "completed" ? ` (${reason})` : "";
    return { adapter_result: "error", error: { type: "ClaudeExit", message: `claude exited ${r.code}${at}: ${why}` } };
  }
  if (r.json.is_error === true || (reason !== null && reason !== "completed")) {
    return {
      adapter_result: "error",
      error: { type: "ClaudeError", message: `claude ended with ${reason ?? "an error"}: ${text}`.trim() },
    };
  }
  if (result.trim() === "") return { adapter_result: "success", message: "claude ended without a final answer." };
  return { adapter_result: "success", message: result, answer: result };
}

/**
 * The calls claude refused by itself (its `permission_denials`: a
 * `permissions.deny` rule, say) got no result: each is a step that did not
 * run, saying who refused it.
 */
async function recordDenials(episode: EpisodeHandle, json: Record<string, unknown> | null): Promise<void> {
  const denials = Array.isArray(json?.permission_denials) ? json.permission_denials : [];
  const open = new Set(episode.unrecordedCalls());
  for (const d of denials as { tool_use_id?: unknown; tool_name?: unknown }[]) {
    if (typeof d?.tool_use_id !== "string" || !open.has(d.tool_use_id)) continue;
    const message = `not run: denied by Claude Code's own permission rules (${String(d.tool_name ?? "tool")})`;
    await episode.record(d.tool_use_id, { status: "skipped", outcome: message, error: { type: "NotRun", message } });
  }
}

/**
 * Reads the session's transcript on into the episode (`model.jsonl`; see
 * model_turns.ts), from the path the hook calls named, else where Claude Code
 * keeps it; `final` once claude has exited. Token accounting never fails the
 * run: without a transcript there are no token metrics.
 */
function sessionTurns(
  s: Pick<Session, "root" | "sessionId" | "workspace" | "prices">,
  episode: EpisodeHandle,
  final: boolean,
): FinishOptions["metrics"] | undefined {
  try {
    const transcript = readCursor(s.root, s.sessionId)?.path ??
      defaultTranscriptPath(s.sessionId, s.workspace, process.env);
    const models = recordTranscriptTurns({
      root: s.root,
      session: s.sessionId,
      transcript,
      episodeId: episode.episodeId,
      dir: episode.dir,
      final,
    });
    return models ? usageMetrics(models, s.prices) : undefined;
  } catch (e) {
    if (process.env.NOEMA_DEBUG) {
      process.stderr.write(`noema: claude-code: model turns not read: ${(e as Error).message}\n`);
    }
    return undefined;
  }
}

async function drive(
  s: Session,
  first: string[],
  options: { signal?: AbortSignal; onEvent?: ResumeOptions["onEvent"]; notices?: RunOptions["notices"] },
): Promise<RunResult> {
  const follower = options.onEvent ? followEvents(s.dir, options.onEvent) : null;
  let r: ClaudeResult;
  try {
    r = await runClaude(s, first, options.signal);
  } finally {
    follower?.stop();
  }
  if (r.json?.terminal_reason === "tool_deferred" && !options.signal?.aborted) {
    // claude stopped: the calls it ran meanwhile are recorded, so the checkpoint now comes last.
    const episode = await attachEpisode(s.dir, { root: s.root, notices: options.notices });
    try {
      sessionTurns(s, episode, false);
      episode.pauseDeferred();
    } finally {
      episode.close();
    }
    return pausedResult(s.episodeId, s.dir);
  }
  // What the run's composer noticed meanwhile (the shared store unreachable…) is recorded with its last events.
  const episode = await attachEpisode(s.dir, { root: s.root, notices: options.notices });
  await recordDenials(episode, r.json);
  if (options.signal?.aborted) {
    // claude was stopped with the calls it was running: they did not finish, and no hook will record them.
    const stopped = { type: "Aborted", message: "the run was interrupted; the call was stopped" };
    for (const id of episode.unrecordedCalls()) await episode.record(id, { status: "error", error: stopped });
  }
  const metrics = sessionTurns(s, episode, true);
  return await episode.finish({ ...claudeEnd(r, options.signal?.aborted === true), ...(metrics ? { metrics } : {}) });
}

async function runClaudeCode(task: string, options: RunOptions): Promise<RunResult> {
  if (typeof task !== "string" || task.trim() === "") {
    throw new NoemaError("usage", "the task must be a non-empty string", { exitCode: EXIT.USAGE });
  }
  const config = options.adapter ?? {};
  const baseDir = options.base_dir ?? process.cwd();
  const bin = findClaude({
    configured: typeof config.claude_bin === "string" ? config.claude_bin : undefined,
    baseDir,
  });
  const workspace = resolve(options.workspace ?? process.cwd());
  if (!statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) {
    throw new NoemaError("usage", `--workspace: ${workspace} is not a directory`, { exitCode: EXIT.USAGE });
  }
  const root = resolveRoot(options);
  const sessionId = crypto.randomUUID();
  const { using: _u, steps: _s, planner: _p, args, adapter: _a, onEvent, signal, prices, ...rest } = options;
  const episode = await openEpisode(task, {
    ...rest,
    root,
    workspace,
    using: "claude-code",
    adapter: {
      ...config,
      claude_bin: bin,
      session_id: sessionId,
      args: [...(args ?? [])],
      ...(prices ? { prices } : {}),
    },
  });
  const dir = episode.dir;
  const episodeId = episode.episodeId;
  episode.close();
  const s: Session = { bin, sessionId, workspace, root, episodeId, dir, extraArgs: args ?? [], prices };
  return await drive(s, ["-p", task, "--session-id", sessionId], {
    signal,
    onEvent: onEvent as ResumeOptions["onEvent"],
    notices: options.notices,
  });
}

/** The price table recorded with the adapter settings, if it still reads as one. */
function pricesOf(value: unknown): PriceTable | undefined {
  const r = v.safeParse(PriceTable, value);
  return r.success ? r.output : undefined;
}

async function resumeClaudeCode(dir: string, options: ResumeOptions): Promise<RunResult> {
  const start = startEvent(dir);
  const settings = (start?.payload.settings ?? {}) as Record<string, unknown>;
  const adapter = (settings.adapter ?? {}) as Record<string, unknown>;
  const sessionId = adapter.session_id, bin = adapter.claude_bin;
  const root = resolve(dir, "..", "..");
  const episodeId = String(start?.payload.episode_id ?? "");
  if (options.abort) {
    // Any claude-code episode ends so, one noema run drove or one recorded from Claude Code's hooks alike.
    const episode = await attachEpisode(dir, { root });
    // A session noema run drove (its id recorded in clear): the turns claude took before the pause count.
    const metrics = typeof sessionId === "string"
      ? sessionTurns(
        {
          root,
          sessionId,
          workspace: String(settings.workspace ?? process.cwd()),
          prices: pricesOf(adapter.prices),
        },
        episode,
        true,
      )
      : undefined;
    return await episode.finish({ ...abortEnd(dir), ...(metrics ? { metrics } : {}) });
  }
  if (typeof sessionId !== "string" || typeof bin !== "string") {
    throw new NoemaError(
      "mismatch",
      `${dir}: the start event has no claude session to resume (an episode recorded from Claude Code's hooks: ` +
        `the session's next hook call continues it; ${calledAs()} resume ${episodeId} --abort ends it)`,
      { exitCode: EXIT.MISMATCH },
    );
  }
  const pending = pausedCheckpoint(dir, "claude-code");
  if (!pending.approval) {
    throw new NoemaError(
      "no_decision",
      `checkpoint ${pending.checkpoint.checkpoint_id} has no decision yet: run ${calledAs()} approve ${episodeId} --checkpoint ${pending.checkpoint.checkpoint_id} or ${calledAs()} reject ${episodeId} --checkpoint ${pending.checkpoint.checkpoint_id}`,
      { exitCode: EXIT.NO_CHECKPOINT },
    );
  }
  const s: Session = {
    bin,
    sessionId,
    workspace: String(settings.workspace ?? process.cwd()),
    root,
    episodeId,
    dir,
    extraArgs: Array.isArray(adapter.args) ? adapter.args.map(String) : [],
    prices: pricesOf(adapter.prices),
  };
  return await drive(s, ["-p", "--resume", sessionId], {
    signal: options.signal,
    onEvent: options.onEvent,
    notices: options.notices,
  });
}

/**
 * The Claude Code driver (`--using claude-code`).
 *
 * @example
 * ```ts
 * import { claudeCodeDriver } from "./run.ts";
 * const r = await claudeCodeDriver.run("fix the failing test", { workspace: ".", policies: ["policies/no-push.ts"] });
 * ```
 */
export const claudeCodeDriver: Driver = { name: "claude-code", run: runClaudeCode, resume: resumeClaudeCode };
