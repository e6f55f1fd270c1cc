/**
 * Deciding on and continuing paused runs, and recovering crashed ones:
 * `approve`, `reject`, `resume` (same episode directory, same id).
 *
 * Resume fails closed, writing nothing, when the run is sealed (it has a
 * manifest), when the checkpoint or the decision is missing, when
 * `state.json` or `events.jsonl` changed since the checkpoint, when the
 * decision was already consumed, or when the adapter or a policy differs
 * from the paused run's.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { osUserName } from "./os_user.ts";
import { EXIT, NoemaError } from "../errors.ts";
import type { AdapterInstance, AdapterPlugin, PendingAction, PolicyObject } from "../plugins/api.ts";
import { type AdapterRegistry, loadAdapterFrom, type LoadedAdapter, loadPlannerFile } from "../plugins/loader.ts";
import type { PlanStep } from "../schema/plan.ts";
import type { State } from "../schema/state.ts";
import { checkState } from "../schema/state.ts";
import { sha256File } from "../store/hash.ts";
import { checkpointDigest } from "../store/checkpoint_digest.ts";
import { readJsonl } from "../store/jsonl.ts";
import { ARTIFACTS, type EpisodeLocation, locateEpisode, type RootOptions } from "../store/layout.ts";
import { acquireLock } from "../store/lock.ts";
import { refuseSymlinkedArtifacts } from "../store/layout.ts";
import { setAsideTail } from "../store/set_aside.ts";
import { readJsonFile } from "../store/json_file.ts";
import { refuseIrregularArtifacts } from "../store/regular_file.ts";
import { startVerification } from "../verify/outcome.ts";
import type { Outcome } from "../schema/summary.ts";
import { snapshotPolicy } from "../verify/snapshot.ts";
import {
  alreadyDecided,
  type ApprovalRecord,
  approvalSummary,
  checkEventMatches,
  checkJudgedAction,
  type Checkpoint,
  consumeApproval,
  deciderOf,
  decisionBindingProblem,
  readApproval,
  readCheckpoint,
  writeApproval,
} from "./checkpoint.ts";
import { Engine, type EngineProgress, type EngineSettings, type RunResult } from "./engine.ts";
import { rebuildRun, type RebuiltRun } from "./rebuild.ts";
import { Recorder } from "./recorder.ts";
import { ArtifactSink } from "./artifact_sink.ts";
import { Redactor } from "./redact.ts";
import { createAdapter, type RunSettingsRecord } from "./run.ts";
import { settingsFromRecord } from "./core/options.ts";
import { pluginMismatch, reloadPolicies } from "./core/reload.ts";
import type { AssertionSpec } from "../verify/assertions.ts";
import { type ProcessIdentity, type StopReport, stopSurvivors } from "./process_group.ts";
import type { InterruptedAction } from "./rebuild.ts";
import { manifestKeyFromEnv } from "../store/signing.ts";
import { calledAs } from "../called_as.ts";

/** The pending checkpoint of a paused run. */
export interface PendingRun {
  episode_id: string;
  episode_dir: string;
  checkpoint: Checkpoint;
  /** The decision, when one was recorded. */
  approval: ApprovalRecord | null;
}

/**
 * Finds the checkpoint a paused run waits on: its last event is a
 * `run.checkpoint`. Throws (exit code 5) for a sealed run and (exit code 6)
 * when the run is not paused.
 *
 * @example
 * ```ts
 * import { pendingCheckpoint } from "noema";
 * const { checkpoint } = pendingCheckpoint("ep_01K9RBBMXXRSFWR49SXFGF4SPR");
 * console.log(checkpoint.pending.reason);
 * ```
 */
export function pendingCheckpoint(ref: string, options: RootOptions = {}): PendingRun {
  const loc = locateEpisode(ref, options);
  if (existsSync(join(loc.dir, ARTIFACTS.manifest))) {
    throw new NoemaError(
      "sealed",
      `episode ${loc.id} is terminal (sealed by manifest.json); there is nothing to decide or resume`,
      {
        exitCode: EXIT.SEALED,
      },
    );
  }
  let last: Record<string, unknown> | null = null;
  const events = join(loc.dir, ARTIFACTS.events);
  for (const entry of readJsonl(events, { noFollow: true })) if (!entry.problem) last = entry.value;
  const payload = (last?.payload ?? {}) as Record<string, unknown>;
  if (last?.event_type !== "run.checkpoint" || typeof payload.checkpoint_id !== "string") {
    throw new NoemaError(
      "not_paused",
      `episode ${loc.id} is not waiting for approval (its last event is not a run.checkpoint)`,
      {
        exitCode: EXIT.NO_CHECKPOINT,
      },
    );
  }
  const checkpoint = readCheckpoint(loc.dir, payload.checkpoint_id);
  checkEventMatches(checkpoint, payload); // what a decider is shown (the event or the file) is what runs
  checkJudgedAction(loc.dir, checkpoint); // and what policies and governance judged
  return {
    episode_id: loc.id,
    episode_dir: loc.dir,
    checkpoint,
    approval: readApproval(loc.dir, checkpoint.checkpoint_id),
  };
}

/** Options of {@link approve} and {@link reject}. */
export interface DecideOptions extends RootOptions {
  /** Why. */
  note?: string;
  /** The name the decider gives: recorded as `claimed_by` beside the OS user (`by`), never trusted. */
  by?: string;
  /** The label of the `noema serve` token that made the request: then `by`, authenticated as `serve_token`. */
  servedBy?: string;
  /** The checkpoint the decider saw: a run that waits on another one now is refused (exit 7), not decided on. */
  checkpointId?: string;
}

/**
 * A decider that arrives once a resume has taken the run past its checkpoint (its last event is no longer
 * the `run.checkpoint`, or `state.json` was rewritten) lost the race to a decision already recorded on that
 * checkpoint: it is told so (8), not "not paused" (6) or "changed since the checkpoint" (7).
 */
function lostToDecision(e: unknown, dir: string): unknown {
  if (!(e instanceof NoemaError) || (e.exitCode !== EXIT.NO_CHECKPOINT && e.exitCode !== EXIT.MISMATCH)) return e;
  let checkpointId: string | null = null;
  for (const entry of readJsonl(join(dir, ARTIFACTS.events))) {
    const v = entry.problem ? null : entry.value;
    const id = (v?.payload as { checkpoint_id?: unknown } | undefined)?.checkpoint_id;
    if (v?.event_type === "run.checkpoint" && typeof id === "string") checkpointId = id;
  }
  if (checkpointId === null) return e;
  try {
    const existing = readApproval(dir, checkpointId);
    return existing ? alreadyDecided(checkpointId, existing) : e;
  } catch {
    return e; // an unreadable decision: the original error stands
  }
}

function decideOn(ref: string, decision: ApprovalRecord["decision"], options: DecideOptions): ApprovalRecord {
  let pending: PendingRun;
  try {
    pending = pendingCheckpoint(ref, options);
  } catch (e) {
    if (!(e instanceof NoemaError) || e.exitCode !== EXIT.NO_CHECKPOINT) throw e;
    throw lostToDecision(e, locateEpisode(ref, options).dir);
  }
  refuseSymlinkedArtifacts(pending.episode_dir); // a decision read from, or written to, a planted link is refused
  if (options.checkpointId !== undefined && options.checkpointId !== pending.checkpoint.checkpoint_id) {
    throw new NoemaError(
      "stale",
      `${pending.episode_id} now waits on ${pending.checkpoint.checkpoint_id}, not on ${options.checkpointId}, the ` +
        "checkpoint the decision was asked for: nothing decided",
      { exitCode: EXIT.MISMATCH },
    );
  }
  const record: ApprovalRecord = {
    schema_version: "approval/1.0",
    episode_id: pending.episode_id,
    checkpoint_id: pending.checkpoint.checkpoint_id,
    state_hash: pending.checkpoint.state_hash,
    checkpoint_digest: checkpointDigest(pending.checkpoint as unknown as Record<string, unknown>),
    decision,
    by: options.servedBy ?? osUserName(),
    at: new Date().toISOString(),
    note: options.note ?? null,
    consumed_at: null,
    consumed_by: null,
    authenticated_as: options.servedBy !== undefined ? "serve_token" : "os_user",
    database_role: null,
    claimed_by: options.by ?? null,
  };
  const stateHash = sha256File(join(pending.episode_dir, ARTIFACTS.state)).sha256;
  if (stateHash !== pending.checkpoint.state_hash) {
    throw lostToDecision(
      new NoemaError(
        "mismatch",
        `state.json changed since checkpoint ${record.checkpoint_id} (${stateHash}, checkpoint has ${pending.checkpoint.state_hash}); refusing to decide`,
        { exitCode: EXIT.MISMATCH },
      ),
      pending.episode_dir,
    );
  }
  writeApproval(pending.episode_dir, record);
  return record;
}

/**
 * Approves the pending action of a paused run. The record is bound to the
 * checkpoint and its `state_hash`; `resume` then executes that action.
 *
 * @example
 * ```ts
 * import { approve, resume } from "noema";
 * approve("ep_01K9RBBMXXRSFWR49SXFGF4SPR", { by: "ana", note: "checked the diff" });
 * await resume("ep_01K9RBBMXXRSFWR49SXFGF4SPR");
 * ```
 */
export function approve(ref: string, options: DecideOptions = {}): ApprovalRecord {
  return decideOn(ref, "approved", options);
}

/**
 * Rejects the pending action of a paused run; `resume` then marks the step
 * vetoed and ends the run as vetoed.
 *
 * @example
 * ```ts
 * import { reject } from "noema";
 * reject("ep_01K9RBBMXXRSFWR49SXFGF4SPR", { note: "not during the freeze" });
 * ```
 */
export function reject(ref: string, options: DecideOptions = {}): ApprovalRecord {
  return decideOn(ref, "rejected", options);
}

/** Options of {@link resume}. */
export interface ResumeOptions extends RootOptions {
  /** End the run as `aborted` with terminal artifacts instead of continuing. */
  abort?: boolean;
  /** The adapter: must be the one the run used (by name or path); needed when the run used an adapter object. */
  using?: string | AdapterPlugin;
  /** The adapters a recorded `using` name may select (the public `resume` passes `BUILTIN_ADAPTERS`). */
  adapters?: AdapterRegistry;
  /** Policies given as objects to the original run (files are reloaded from their recorded paths). */
  policies?: readonly (PolicyObject | (new () => unknown))[];
  signal?: AbortSignal;
  onEvent?: Engine["s"]["onEvent"];
  /** Notices for the record (see `RunOptions.notices`). */
  notices?: Engine["s"]["notices"];
  /** Called while the post-run workspace snapshot is captured. */
  onSnapshotProgress?: (snapshot: "pre" | "post", files: number) => void;
  /**
   * A crashed run's action that was running when noema died runs again
   * (at-least-once). `false` (`--no-retry`): its step fails instead and
   * the run ends `error`. @default {true}
   */
  retry?: boolean;
}

function mismatch(message: string): NoemaError {
  return new NoemaError("mismatch", message, { exitCode: EXIT.MISMATCH });
}

async function reloadAdapter(
  rec: RunSettingsRecord,
  { using, adapters }: ResumeOptions,
  acts: boolean,
): Promise<LoadedAdapter> {
  const loadAdapter = (ref: string) => loadAdapterFrom(ref, adapters);
  if (typeof using === "object") {
    if (using.name !== rec.using) throw pluginMismatch(`the run used adapter ${rec.using}, not ${using.name}`);
    return { plugin: using, label: using.name, path: null, sha256: null };
  }
  if (typeof using === "string") {
    const given = await loadAdapter(using);
    if (given.label !== rec.using || (rec.adapter_sha256 !== null && given.sha256 !== rec.adapter_sha256)) {
      throw pluginMismatch(
        `the run used adapter ${rec.using}${rec.adapter_path ? ` (${rec.adapter_path})` : ""}, not ${using}`,
      );
    }
    return given;
  }
  if (rec.adapter_path === null) {
    const builtin = await loadAdapter(rec.using).catch(() => null);
    if (!builtin || builtin.path !== null) {
      if (!acts) {
        // Rejecting or aborting runs no action: a stand-in with the run's label is enough.
        const standIn: AdapterPlugin = {
          name: rec.using,
          create: () => ({
            act: () => ({ status: "error", error: { type: "NoAdapter", message: "no adapter on resume" } }),
          }),
        };
        return { plugin: standIn, label: rec.using, path: null, sha256: null };
      }
      throw pluginMismatch(`the run used an adapter object (${rec.using}); pass it again to resume`);
    }
    return builtin;
  }
  if (!existsSync(rec.adapter_path)) throw pluginMismatch(`the run's adapter file is gone: ${rec.adapter_path}`);
  const loaded = await loadAdapter(rec.adapter_path);
  if (loaded.sha256 !== rec.adapter_sha256) {
    throw pluginMismatch(`the adapter file changed since the run paused: ${rec.adapter_path}`);
  }
  return loaded;
}

/**
 * Locates an episode to resume, refusing a terminal one (sealed by
 * `manifest.json`, exit 5).
 *
 * @example
 * ```ts
 * import { resumableEpisode } from "./resume.ts";
 * resumableEpisode("ep_01K9RBBMXXRSFWR49SXFGF4SPR").dir; // ".noema/episodes/ep_01K9RBBMXXRSFWR49SXFGF4SPR"
 * ```
 */
export function resumableEpisode(ref: string, options: RootOptions = {}): EpisodeLocation {
  const loc = locateEpisode(ref, options);
  refuseIrregularArtifacts(loc.dir); // a FIFO where an artifact should be would block every open for ever
  refuseSymlinkedArtifacts(loc.dir, "resume"); // nor is a link planted there read (its target's JSON is not ours)
  checkStateFile(loc.dir); // a state.json that breaks the schema is refused before anything is written
  if (existsSync(join(loc.dir, ARTIFACTS.manifest))) {
    throw new NoemaError(
      "sealed",
      `episode ${loc.id} is terminal (sealed by manifest.json); there is nothing to resume`,
      { exitCode: EXIT.SEALED },
    );
  }
  return loc;
}

/**
 * Continues a paused or crashed plan-driven run in the same episode directory
 * (the public `resume` in `src/drivers.ts` hands an episode a driver recorded
 * to that driver first).
 *
 * - A paused run needs a decision (`approve`/`reject`): approved, the pending
 *   action runs as it was checked (policies are not consulted again for it)
 *   and the plan continues; rejected, the step is `vetoed` and the run ends
 *   `vetoed`.
 * - A crashed run (no pause, no terminal artifacts) continues from the first
 *   step the event log does not show as finished; an action that was running
 *   when the process died runs again. A torn final line is moved aside to
 *   `events.jsonl.torn-<offset>` (nothing is lost) before appending.
 * - `abort: true` ends either kind as `aborted`, with terminal artifacts.
 *
 * `episode.started_at` and the `start` event never change; the time spent
 * paused is reported as `metrics.latencies.waiting_ms`, and durations count
 * working time.
 *
 * @example
 * ```ts
 * import { resume } from "noema";
 * const r = await resume("ep_01K9RBBMXXRSFWR49SXFGF4SPR");
 * console.log(r.status, r.exit_code);
 * ```
 */
export async function resume(ref: string, options: ResumeOptions = {}): Promise<RunResult> {
  manifestKeyFromEnv(); // a bad NOEMA_SIGNING_KEY_FILE is refused before anything is written, naming it
  const loc = resumableEpisode(ref, options);
  const dir = loc.dir;
  const lock = acquireLock(dir, "resume");
  try {
    refuseSymlinkedArtifacts(dir);
    const built = readLog(dir, options);
    const { checkpoint, approval } = checkPause(dir, loc.id, built, options);
    const r = await resumeSettings(dir, loc.id, built, checkpoint, approval, options);
    const opened = await openResumed(dir, loc.id, built, r, options);
    const { engine, adapter } = opened;
    try {
      if (built.terminate) return await sealTerminated(engine, built);
      // A program that outlived the crashed run is stopped before anything runs again.
      const stopped = built.interrupted ? await stopSurvivors(identityOf(built.interrupted)) : null;
      const announced = announceResume(engine, dir, built, checkpoint, approval, options, stopped);
      return await continueResumed(engine, checkpoint, announced, r.pendingAction, options);
    } finally {
      engine.rec.close();
      engine.learnLog.close();
      await adapter.close?.();
    }
  } finally {
    lock.release();
  }
}

/** Refuses (exit 7, naming the file and the field) a `state.json` that breaks the schema. */
function checkStateFile(dir: string): void {
  const path = join(dir, ARTIFACTS.state);
  const problems = checkState(readJsonFile(path, path));
  if (problems.length === 0) return;
  const p = problems[0];
  throw new NoemaError(
    "bad_state",
    `${p.path === "" ? "" : `${p.path}: `}${p.message}${
      problems.length > 1 ? ` (and ${problems.length - 1} more)` : ""
    }; the run cannot be resumed from it (${calledAs()} validate lists every problem)`,
    { file: path, exitCode: EXIT.MISMATCH },
  );
}

/** The rebuilt log; damaged lines refuse the resume (with `abort`, they are set aside first). */
function readLog(dir: string, options: ResumeOptions): RebuiltRun {
  let built = rebuildRun(dir);
  if (built.damaged.length > 0 && options.abort) {
    // --abort seals even a damaged log: the lines from the first bad one on are set aside (nothing is lost).
    setAsideTail(join(dir, ARTIFACTS.events), built.damaged[0].offset);
    built = rebuildRun(dir);
  }
  if (built.damaged.length > 0) {
    throw mismatch(
      `events.jsonl has damaged lines (line ${built.damaged[0].line}: ${
        built.damaged[0].message
      }); run ${calledAs()} validate`,
    );
  }
  return built;
}

/** A paused run's checkpoint and decision, checked against the log and state.json (fails closed). */
function checkPause(
  dir: string,
  id: string,
  built: RebuiltRun,
  options: ResumeOptions,
): { checkpoint: Checkpoint | null; approval: ApprovalRecord | null } {
  const loc = { id };
  const last = built.lastEvent;
  const lastPayload = (last.payload ?? {}) as Record<string, unknown>;
  const paused = last.event_type === "run.checkpoint" && built.torn === null;
  let checkpoint: Checkpoint | null = null;
  let approval: ApprovalRecord | null = null;
  if (paused) {
    checkpoint = readCheckpoint(dir, String(lastPayload.checkpoint_id));
    checkEventMatches(checkpoint, lastPayload);
    if (built.eventCount !== checkpoint.event_offset + 1) {
      throw mismatch(
        `events.jsonl has ${built.eventCount} events; checkpoint ${checkpoint.checkpoint_id} expects ${
          checkpoint.event_offset + 1
        }`,
      );
    }
    // The checkpoint event is last (checked above), so the event at the offset is the one before it.
    const idAtOffset = built.previousEventId;
    if (idAtOffset !== checkpoint.last_event_id) {
      throw mismatch(
        `event ${checkpoint.event_offset} is ${idAtOffset}; checkpoint ${checkpoint.checkpoint_id} expects ${checkpoint.last_event_id}`,
      );
    }
    const stateHash = sha256File(join(dir, ARTIFACTS.state)).sha256;
    if (stateHash !== checkpoint.state_hash) {
      throw mismatch(
        `state.json changed since checkpoint ${checkpoint.checkpoint_id} (${stateHash}, checkpoint has ${checkpoint.state_hash})`,
      );
    }
    checkLogPrefix(dir, checkpoint);
    if (!options.abort) {
      approval = readApproval(dir, checkpoint.checkpoint_id);
      if (!approval) {
        throw new NoemaError(
          "no_decision",
          `checkpoint ${checkpoint.checkpoint_id} has no decision yet: run ${calledAs()} approve ${loc.id} --checkpoint ${checkpoint.checkpoint_id} or ${calledAs()} reject ${loc.id} --checkpoint ${checkpoint.checkpoint_id}`,
          {
            exitCode: EXIT.NO_CHECKPOINT,
          },
        );
      }
      checkDecision(checkpoint, approval, id);
      checkJudgedAction(dir, checkpoint); // the action to run is the one policies and governance judged
    }
  } else if (last.event_type === "run.checkpoint" && built.torn !== null) {
    throw mismatch(`events.jsonl ends in a torn line after a checkpoint; run ${calledAs()} validate`);
  }

  return { checkpoint, approval };
}

/**
 * Refuses (7) a log whose bytes up to the checkpoint are not the ones the checkpoint recorded (an event before it
 * rewritten, keeping the count and the last id). A checkpoint written before noema recorded them is checked by its
 * event count and last event id only.
 */
function checkLogPrefix(dir: string, checkpoint: Checkpoint): void {
  const bytes = checkpoint.events_bytes;
  if (typeof bytes !== "number" || typeof checkpoint.events_sha256 !== "string") return;
  const prefix = sha256File(join(dir, ARTIFACTS.events), bytes);
  if (prefix.size_bytes !== bytes || prefix.sha256 !== checkpoint.events_sha256) {
    throw mismatch(
      `events.jsonl changed before checkpoint ${checkpoint.checkpoint_id}: its first ${bytes} bytes are not the ones ` +
        `the checkpoint recorded (${checkpoint.events_sha256})`,
    );
  }
}

/**
 * Refuses a decision a resume must not act on: one already consumed (8); one bound to another checkpoint, state or
 * pending action (7: its `checkpoint_digest` differs from the checkpoint's, or it has none, written by a noema that
 * did not bind it); one that is neither `approved` nor `rejected` (7: only `approved` runs the action, and nothing
 * else is read as a rejection).
 */
function checkDecision(checkpoint: Checkpoint, approval: ApprovalRecord, id: string): void {
  if (approval.consumed_at) {
    throw new NoemaError(
      "consumed",
      `the decision on checkpoint ${checkpoint.checkpoint_id} was already used by a resume at ${approval.consumed_at}`,
      { exitCode: EXIT.CONSUMED },
    );
  }
  const unbound = decisionBindingProblem(checkpoint, approval, id);
  if (unbound !== null) throw mismatch(unbound);
  const decision: unknown = approval.decision;
  if (decision !== "approved" && decision !== "rejected") {
    throw mismatch(
      `the decision on checkpoint ${checkpoint.checkpoint_id} is ${
        JSON.stringify(decision)
      }, neither "approved" nor "rejected"; nothing runs on it`,
    );
  }
}

/** What the resumed engine runs with: settings, the steps' real inputs, the approved action. */
interface ResumeSettings {
  settings: EngineSettings;
  rec: RunSettingsRecord;
  state: State;
  redactor: Redactor;
  inputs: Map<string, Record<string, unknown>>;
  pendingAction: PendingAction | null;
  checkpoint: Checkpoint | null;
  adapter: AdapterInstance;
}

/** Reloads the recorded settings and plugins, and restores the masked inputs of the steps still to run. */
async function resumeSettings(
  dir: string,
  id: string,
  built: RebuiltRun,
  checkpoint: Checkpoint | null,
  approval: ApprovalRecord | null,
  options: ResumeOptions,
): Promise<ResumeSettings> {
  const loc = { id };
  const rec = built.start.settings as RunSettingsRecord | undefined;
  if (!rec || typeof rec !== "object" || typeof rec.using !== "string") {
    throw mismatch(
      "the start event has no run settings (written by another implementation?); this run cannot be resumed by noema",
    );
  }
  if (checkpoint && checkpoint.adapter_label !== rec.using) {
    throw pluginMismatch(`checkpoint adapter ${checkpoint.adapter_label} differs from the run's ${rec.using}`);
  }
  // Only an approval runs the pending action (a crashed run, with no decision, continues where it stopped).
  const acts = !options.abort && (approval === null || approval.decision === "approved");
  const loadedAdapter = await reloadAdapter(rec, options, acts);
  const policies = rec.mode === "meta" ? await reloadPolicies(rec, options.policies, acts) : [];
  const planner = rec.planner.path
    ? await loadPlannerFile(rec.planner.path).then((p) => ({ name: p.planner.name, path: p.path, sha256: p.sha256 }))
    : rec.planner;
  const state = readJsonFile(join(dir, ARTIFACTS.state)) as State;
  const redactor = new Redactor({ secrets: rec.secrets });
  const { inputs, pendingAction, task } = restoreMasked(built, state, checkpoint, redactor, acts);
  const settings = settingsFromRecord(rec, {
    episodeId: loc.id,
    dir,
    task,
    redactedTask: String(state.goal?.task ?? built.start.task),
    loadedAdapter,
    policies,
    planner,
    signal: options.signal,
    onEvent: options.onEvent,
    notices: options.notices,
  });
  const adapter = await createAdapter(loadedAdapter, {
    config: { base_dir: rec.base_dir, ...rec.adapter },
    args: rec.args,
    workspace: rec.workspace,
    dir,
    secrets: rec.secrets,
  });

  return { settings, rec, state, redactor, inputs, pendingAction, checkpoint, adapter };
}

/**
 * Artifacts hold masked values; the steps still to run act with the real ones, restored from the
 * environment (`[REDACTED:<NAME>]`): their inputs, the pending action and the task. When the run
 * acts again (`acts`), a value that cannot be restored stops the resume.
 */
function restoreMasked(
  built: RebuiltRun,
  state: State,
  checkpoint: Checkpoint | null,
  redactor: Redactor,
  acts: boolean,
): { inputs: Map<string, Record<string, unknown>>; pendingAction: PendingAction | null; task: string } {
  const toRun = new Set(
    built.steps.filter((st) => st.status !== "done" && st.status !== "failed" && st.status !== "skipped").map((st) =>
      st.id
    ),
  );
  const inputs = new Map<string, Record<string, unknown>>();
  const restore = <T>(value: T, where: string): T => {
    const { value: real, unresolved } = redactor.unmask(value);
    if (unresolved.length > 0 && acts) {
      throw new NoemaError(
        "secret_unavailable",
        `${where} holds masked secrets that cannot be restored (${unresolved.join(", ")}): set ${
          unresolved.map((u) => u.slice(10, -1)).filter((n) => n !== "").join(", ") || "them"
        } in the environment (a token found by pattern, not named with --secret, cannot be restored)`,
        { exitCode: EXIT.USAGE },
      );
    }
    return real;
  };
  for (const st of state.plan?.steps ?? []) {
    inputs.set(st.id, toRun.has(st.id) ? restore(st.inputs ?? {}, `step ${st.id}`) : st.inputs ?? {});
  }
  const pendingAction = checkpoint
    ? restore(checkpoint.pending.action, `the pending action of ${checkpoint.checkpoint_id}`)
    : null;
  const task = restore(String(state.goal?.task ?? built.start.task), "the task");
  return { inputs, pendingAction, task };
}

/** Creates the adapter, sets a torn line aside, and builds the engine from the log's progress. */
async function openResumed(
  dir: string,
  id: string,
  built: RebuiltRun,
  r: ResumeSettings,
  options: ResumeOptions,
): Promise<{ engine: Engine; adapter: AdapterInstance }> {
  const { settings, rec, state, redactor, inputs, adapter } = r;
  const loc = { id };
  const last = built.lastEvent;
  // Every check passed: from here on the run is written to.
  // A torn (or too long) final line moves aside in bounded memory, never through a symlink.
  if (built.torn) setAsideTail(join(dir, ARTIFACTS.events), built.torn.offset);
  const recorder = new Recorder(dir, loc.id, {
    count: built.eventCount,
    lastEventId: built.lastEventId,
    lastTimestamp: String(last.timestamp),
  }, new ArtifactSink(dir, redactor));
  const learnLog = recorder.sink.jsonl(ARTIFACTS.learn);
  try {
    const steps = resumedSteps(built, state);
    const resumedAt = recorder.now();
    const waitingMs = built.waitingMs + (built.pausedAt !== null ? Date.parse(resumedAt) - built.pausedAt : 0);
    const verifying = await startVerification({
      workspace: rec.workspace,
      specs: rec.verify as AssertionSpec[],
      policy: snapshotPolicy({ extra: rec.verify_ignore }),
      episodeDir: dir,
      baseDir: rec.base_dir,
      redact: recorder.sink.mask,
      resume: true,
      onProgress: options.onSnapshotProgress,
    });
    refreshState(state, steps, built);
    const engine = new Engine({
      settings,
      progress: resumedProgress(built, state, steps, waitingMs, inputs),
      recorder,
      learnLog,
      adapter,
      redactor,
      verifying,
    });
    engine.adapterResult = adapterResultSoFar(built.actions);
    return { engine, adapter };
  } catch (e) {
    recorder.close();
    learnLog.close();
    throw e;
  }
}

/** The steps as the log shows them (over state.json's); a step the log does not show finished runs (again). */
function resumedSteps(built: RebuiltRun, state: State): PlanStep[] {
  const stateSteps = new Map((state.plan?.steps ?? []).map((s) => [s.id, s]));
  return built.steps.map((s) => ({
    ...(stateSteps.get(s.id) ?? {}),
    ...s,
    status: s.status === "running" ? "pending" : s.status,
  }));
}

/**
 * Brings state.json's projection in line with the log: the plan (its steps, and the source, time and rationale of
 * the latest plan event: a run killed while sealing after a resume has a state.json older than that event),
 * pending outcomes, the facts, the links (also what `noema policy backtest` shows the policies, action by action).
 *
 * @example
 * ```ts
 * import { refreshState } from "./resume.ts";
 * // refreshState(state, built.steps, built); // state.outcomes.actions === built.actions
 * ```
 */
export function refreshState(state: State, steps: PlanStep[], built: RebuiltRun): void {
  state.plan = { ...(state.plan ?? { steps: [] }), steps };
  if (built.planUpdatedAt !== null) {
    state.plan.source = built.planSource;
    state.plan.updated_at = built.planUpdatedAt;
    if (built.planRationale !== null) state.plan.rationale = built.planRationale;
  }
  state.outcomes = {
    ...(state.outcomes ?? { status: "pending" }),
    status: "pending",
    actions: built.actions,
    error: null,
  };
  state.memory = { ...(state.memory ?? {}), facts: built.facts };
  state.links = { events: ARTIFACTS.events, learn: ARTIFACTS.learn };
}

/** The engine's progress as rebuilt from the log, with the plan the resume runs. */
function resumedProgress(
  built: RebuiltRun,
  state: State,
  steps: PlanStep[],
  waitingMs: number,
  inputs: Map<string, Record<string, unknown>>,
): EngineProgress {
  return {
    state,
    steps,
    planSource: "planner:resume",
    actions: built.actions,
    facts: built.facts,
    counters: built.counters,
    evidence: built.evidence,
    lastDiff: built.lastDiff,
    lastDirectivePolicy: built.lastDirectivePolicy,
    lastStepEventId: built.lastStepEventId,
    startedAt: built.startedAt,
    waitingMs,
    stepRedaction: new Map(),
    inputs,
  };
}

/** What the adapter did before this process: an error, a success, or nothing yet. */
function adapterResultSoFar(actions: RebuiltRun["actions"]): Engine["adapterResult"] {
  // An attempt interrupted by a crash is not the adapter's error: its step runs again.
  const done = actions.filter((a) => (a.output as { interrupted?: unknown } | null)?.interrupted !== true);
  return done.some((a) => a.result_status === "error")
    ? "error"
    : done.some((a) => a.result_status !== "skipped")
    ? "success"
    : "skipped";
}

/** A run whose log has `terminate` lacks only its terminal artifacts: insight and the final projection. */
async function sealTerminated(engine: Engine, built: RebuiltRun): Promise<RunResult> {
  const outcomes = engine.p.state.outcomes!;
  const verifying = engine.verifying!;
  if (built.terminate) {
    // Nothing is appended but insight and the final projection: no resume or plan event after terminate.
    // The run had ended (terminate is in the log); only its terminal artifacts are missing.
    const t = built.terminate;
    engine.status = outcomes.status = String(t.status) as typeof engine.status;
    if (t.status === "vetoed" || t.status === "aborted") {
      engine.adapterResult = engine.adapterResult === "error" ? "error" : "skipped";
    }
    const verification = await verifying.finish();
    const outcome = typeof t.outcome === "string" ? t.outcome as Outcome : engine.outcomeOf(verification);
    return engine.seal(outcome, verification);
  }

  throw new Error("internal: sealTerminated without a terminate event");
}

/** The `run.resume` event (the decision consumed) and the plan rebuilt from the log. */
function announceResume(
  engine: Engine,
  dir: string,
  built: RebuiltRun,
  checkpoint: Checkpoint | null,
  decision: ApprovalRecord | null,
  options: ResumeOptions,
  stopped: StopReport | null,
): { approval: ApprovalRecord | null; steps: PlanStep[]; pendingIndex: number; interrupted: string | null } {
  let approval = decision;
  const state = engine.p.state;
  const steps = engine.p.steps;
  const resumeEvent = engine.emit("runtime", {
    kind: "run.resume",
    status: "resuming",
    checkpoint_id: checkpoint?.checkpoint_id ?? null,
    event_offset: checkpoint?.event_offset ?? built.eventCount,
    resume_strategy: options.abort ? "abort" : "same_run_id",
    recovered: checkpoint === null,
    approval: approval ? approvalSummary(approval) : null,
    torn_line: built.torn
      ? {
        offset: built.torn.offset,
        bytes: built.torn.bytes,
        moved_to: `${ARTIFACTS.events}.torn-${built.torn.offset}`,
      }
      : null,
  }, { event_type: "run.resume" });
  if (approval) approval = consumeApproval(dir, approval, resumeEvent.id, resumeEvent.timestamp);
  const retry = !options.abort && options.retry !== false;
  const interrupted = built.interrupted && stopped
    ? recordInterrupted(engine, built.interrupted, stopped, retry)
    : null;
  const pendingIndex = checkpoint ? checkpoint.pending.step_index : -1;
  if (checkpoint && approval?.decision === "rejected") steps[pendingIndex].status = "vetoed";
  const planEvent = engine.emit(
    "plan",
    Engine.planPayload(
      "planner:resume",
      steps,
      checkpoint
        ? `Plan rebuilt from events.jsonl at resume from checkpoint ${checkpoint.checkpoint_id} (${
          approval?.decision ?? "aborted"
        }).`
        : "Plan rebuilt from events.jsonl at recovery after an interruption.",
    ),
  );
  engine.p.counters.plan++;
  engine.p.lastStepEventId = planEvent.id;
  state.plan = {
    steps,
    source: "planner:resume",
    updated_at: planEvent.timestamp,
    rationale: String((planEvent.payload as { rationale: string }).rationale),
  };

  return { approval, steps, pendingIndex, interrupted };
}

/** The recorded identity of an interrupted action's process. */
function identityOf(i: InterruptedAction): ProcessIdentity {
  const p = i.process;
  return {
    pid: Number(p.pid),
    pgid: typeof p.pgid === "number" ? p.pgid : null,
    start_ticks: typeof p.start_ticks === "string" ? p.start_ticks : null,
    boot_id: typeof p.boot_id === "string" ? p.boot_id : null,
  };
}

/**
 * The action that was running when the run died: `action.process_stopped`
 * when something of its program survived (and was stopped), then the
 * attempt as its own failed act (outcome `interrupted`). Its step is pending
 * again when it is retried. Returns the failure's message (null when the
 * step is not in the plan).
 */
function recordInterrupted(engine: Engine, i: InterruptedAction, stop: StopReport, retry: boolean): string | null {
  const p = i.process, id = identityOf(i);
  const index = engine.p.steps.findIndex((st) => st.id === p.step_id);
  if (index < 0) return null;
  if (stop.found.length > 0) {
    engine.emit("runtime", {
      kind: "action.process_stopped",
      status: stop.remaining.length === 0 ? "stopped" : "not_stopped",
      step_id: p.step_id,
      pid: id.pid,
      pgid: id.pgid,
      found: stop.found,
      signals: stop.signals,
      remaining: stop.remaining,
    }, { event_type: "action.process_stopped" });
  }
  const who = `pid ${id.pid}${id.pgid !== null ? `, process group ${id.pgid}` : ""}`;
  const message = `noema stopped while step ${p.step_id} ran (${who}); ${
    stop.found.length > 0
      ? `${stop.found.length} surviving process(es) stopped with ${stop.signals.join(", then ")}`
      : "nothing of it was still running"
  }; ${retry ? "it runs again" : "not retried"}`;
  const action: PendingAction = {
    kind: String(p.action_kind ?? "adapter"),
    tool: String(p.tool ?? ""),
    input: i.input ?? { ...(engine.p.steps[index].inputs ?? {}) },
  };
  engine.recordAct(
    index,
    action,
    String(p.action_candidate_id ?? ""),
    {
      status: "error",
      outcome: "interrupted",
      output: { interrupted: true, pid: id.pid, pgid: id.pgid, survivors: stop.found.length, signals: stop.signals },
      error: { type: "Interrupted", message },
    },
    { startedAt: i.startedAt, durationMs: 0 },
    null,
    false,
  );
  if (retry) engine.setStepStatus(index, "pending");
  return message;
}

/** Aborts, ends a rejected run as vetoed, or executes the plan on (the approved action first). */
async function continueResumed(
  engine: Engine,
  checkpoint: Checkpoint | null,
  announced: { approval: ApprovalRecord | null; steps: PlanStep[]; pendingIndex: number; interrupted: string | null },
  pendingAction: PendingAction | null,
  options: ResumeOptions,
): Promise<RunResult> {
  const { approval, steps, pendingIndex } = announced;
  const outcomes = engine.p.state.outcomes!;
  if (options.abort) {
    engine.status = "aborted";
    engine.message = checkpoint
      ? `Aborted while waiting for approval at ${checkpoint.pending.step_id}.`
      : "Aborted after an interruption.";
    outcomes.error = { type: "Aborted", message: engine.message };
    return await engine.finish();
  }
  if (checkpoint && approval?.decision === "rejected") {
    engine.p.counters.veto++;
    engine.status = "vetoed";
    engine.message = `Rejected by ${deciderOf(approval)}${approval.note ? `: ${approval.note}` : ""}`;
    return await engine.finish();
  }
  if (announced.interrupted !== null && options.retry === false) {
    // --no-retry: the interrupted step failed; the run ends there, as after any failed step.
    engine.status = "error";
    engine.adapterResult = "error";
    outcomes.error = { type: "Interrupted", message: announced.interrupted };
    engine.message = `Step interrupted: ${announced.interrupted}`;
    return await engine.finish();
  }
  const from = checkpoint ? pendingIndex : Math.max(0, steps.findIndex((s) => s.status === "pending"));
  if (!checkpoint && steps.every((s) => s.status !== "pending")) return await engine.finish();
  const executed = await engine.execute(
    from,
    checkpoint && approval
      ? {
        stepIndex: pendingIndex,
        action: pendingAction!,
        candidateId: checkpoint.pending.action_candidate_id,
        approval: {
          checkpoint_id: checkpoint.checkpoint_id,
          decision: approval.decision,
          by: approval.by,
          at: approval.at,
          ...(approval.claimed_by ? { claimed_by: approval.claimed_by } : {}),
        },
      }
      : undefined,
  );
  return executed === "done" ? await engine.finish() : executed;
}
