/**
 * Attaching to an existing, non-terminal episode from another process:
 * rebuilding its engine from `state.json`, the `start` event's recorded
 * settings and `core.json` (or, when `core.json` is missing or behind the
 * log, from the events).
 *
 * @module
 */
import { closeSync, existsSync, readSync } from "node:fs";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { EXIT, NoemaError } from "../../errors.ts";
import type { PolicyObject } from "../../plugins/api.ts";
import type { State } from "../../schema/state.ts";
import { readJsonFile } from "../../store/json_file.ts";
import { openRegularFile } from "../../store/regular_file.ts";
import { ARTIFACTS, locateEpisode, type RootOptions } from "../../store/layout.ts";
import { acquireLock, type EpisodeLock } from "../../store/lock.ts";
import { Engine, type EngineSettings } from "../engine.ts";
import type { PolicyEvidence } from "../learning.ts";
import { rebuildRun } from "../rebuild.ts";
import { Recorder } from "../recorder.ts";
import { ArtifactSink } from "../artifact_sink.ts";
import { Redactor } from "../redact.ts";
import { type RunSettingsRecord, settingsFromRecord } from "./options.ts";
import { externalAdapter } from "./prepare.ts";
import { type CallRecord, type CoreProgress, readCoreProgress } from "./progress_file.ts";
import { decisionEvents } from "../../store/checkpoint_digest.ts";
import { readApproval } from "../checkpoint.ts";
import { lastLine } from "../../store/last_line.ts";
import { callsFromLog, recoverFromLog } from "./recover.ts";
import { reloadPolicies } from "./reload.ts";
import { calledAs } from "../../called_as.ts";

/**
 * How long `attach` (and `resume`) waits for another process holding the episode's lock: 30 s. A holder may keep it
 * for a policy's whole `advise` (up to `--policy-timeout`, 5 s by default) and, on a busy machine, calls racing one
 * episode (an agent's parallel tool calls, each its own hook process) queue behind each other; agents give a hook 60 s.
 */
export const ATTACH_WAIT_MS = 30_000;

/** Options of `EpisodeCore.attach`. */
export interface AttachOptions extends RootOptions {
  /** How long to wait for another process holding the episode's lock. @default {30000} */
  waitMs?: number;
  /** Policies the episode was opened with as objects (files are reloaded from their recorded paths). */
  policies?: readonly (PolicyObject | (new () => unknown))[];
  /** Called after each event is written. */
  onEvent?: EngineSettings["onEvent"];
  /** Notices for the record (see `RunOptions.notices`). */
  notices?: EngineSettings["notices"];
}

/** An attached episode: its engine, lock and the calls decided so far. */
export interface AttachedEpisode {
  engine: Engine;
  lock: EpisodeLock;
  calls: CoreProgress["calls"];
  pausedAt: string | null;
  /** Steps the last plan event carried. */
  announced: number;
  /** The settings recorded in the start event. */
  record: RunSettingsRecord;
}

/** The first line of the event log (the start event), read without reading the rest. */
function firstLine(path: string): Record<string, unknown> {
  const fd = openRegularFile(path); // a FIFO would block
  try {
    let text = "";
    const chunk = Buffer.alloc(65536);
    for (let pos = 0;; pos += chunk.length) {
      const n = readSync(fd, chunk, 0, chunk.length, pos);
      text += chunk.toString("utf8", 0, n);
      const nl = text.indexOf("\n");
      if (nl >= 0) return JSON.parse(text.slice(0, nl));
      if (n < chunk.length) return JSON.parse(text);
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The asked calls' checkpoints as the log has them, for a `core.json` behind it (its process killed after writing
 * events): a call asked again at a new checkpoint (its `run.checkpoint` the latest for its candidate, no `run.resume`
 * after it) waits at that one; a call whose pause ended with no decision applied (a `run.resume` with no approval, and
 * none recorded since) waits at none, and is asked anew when it is made again.
 */
function pausesFromLog(dir: string, calls: Record<string, CallRecord>): Record<string, CallRecord> {
  const events = decisionEvents(join(dir, ARTIFACTS.events));
  const latest = new Map<string, string>(); // candidate id → its latest checkpoint
  for (const [id, p] of events.checkpoints) {
    const candidate = (p.pending as { action_candidate_id?: unknown } | undefined)?.action_candidate_id;
    if (typeof candidate === "string") latest.set(candidate, id);
  }
  const resumed = new Map<string, boolean>(); // checkpoint id → whether a resume applied a decision on it
  for (const p of events.resumes.values()) {
    if (typeof p.checkpoint_id !== "string") continue;
    resumed.set(p.checkpoint_id, (resumed.get(p.checkpoint_id) ?? false) || (p.approval != null));
  }
  for (const c of Object.values(calls)) {
    const last = latest.get(c.action_candidate_id);
    if (c.verdict !== "ask" || last === undefined) continue;
    if (!resumed.has(last)) c.checkpoint_id = last;
    else if (!resumed.get(last) && !readApproval(dir, last)) delete c.checkpoint_id;
  }
  return calls;
}

/** The progress `core.json` holds, or the same rebuilt from the events when it is missing or behind. */
function progressOf(dir: string, state: State): { progress: CoreProgress; startedAt: string } {
  const saved = readCoreProgress(dir);
  const last = lastLine(join(dir, ARTIFACTS.events));
  const lastId = last ? String(JSON.parse(last).id) : null;
  const startedAt = String(state.episode?.started_at);
  if (saved && saved.events.last_event_id === lastId) return { progress: saved, startedAt };
  const built = rebuildRun(dir);
  if (built.torn || built.damaged.length > 0) {
    throw new NoemaError("mismatch", `${join(dir, ARTIFACTS.events)} is damaged; run ${calledAs()} validate`, {
      exitCode: EXIT.MISMATCH,
    });
  }
  // A process died between appending events and rewriting the state: complete the state from the log.
  recoverFromLog(dir, state, built);
  return {
    startedAt: built.startedAt,
    progress: {
      schema_version: "core/1.0",
      events: {
        count: built.eventCount,
        last_event_id: built.lastEventId,
        last_timestamp: String(built.lastEvent.timestamp),
      },
      counters: built.counters,
      evidence: [...built.evidence.values()],
      last_diff: built.lastDiff,
      last_directive_policy: built.lastDirectivePolicy,
      last_step_event_id: built.lastStepEventId,
      waiting_ms: built.waitingMs,
      paused_at: built.pausedAt === null ? null : new Date(built.pausedAt).toISOString(),
      // Unknown after a crash: the next plan event and projection carry everything.
      announced_steps: 0,
      projected_actions: null,
      // Calls whose events were appended after core.json was last written: found again by their call_id.
      calls: pausesFromLog(dir, { ...callsFromLog(dir, saved?.calls ?? {}), ...(saved?.calls ?? {}) }),
    },
  };
}

/**
 * Takes the episode's lock (waiting up to `waitMs`) and rebuilds its engine.
 * Throws exit 5 for a sealed episode, exit 10 when the lock stays held.
 *
 * @example
 * ```ts
 * import { attachEpisode } from "./attach.ts";
 * // const { engine, lock } = await attachEpisode("ep_01…", { root: ".noema" });
 * ```
 */
export async function attachEpisode(ref: string, options: AttachOptions = {}): Promise<AttachedEpisode> {
  const loc = locateEpisode(ref, options);
  const dir = loc.dir;
  const sealed = () =>
    new NoemaError("sealed", `episode ${loc.id} is terminal (sealed by manifest.json)`, { exitCode: EXIT.SEALED });
  if (existsSync(join(dir, ARTIFACTS.manifest))) throw sealed();
  const lock = acquireLock(dir, "core", { waitMs: options.waitMs ?? ATTACH_WAIT_MS });
  try {
    if (existsSync(join(dir, ARTIFACTS.manifest))) throw sealed();
    const start = firstLine(join(dir, ARTIFACTS.events));
    const rec = (start.payload as { settings?: RunSettingsRecord }).settings;
    if (!rec || typeof rec.using !== "string") {
      throw new NoemaError("mismatch", `episode ${loc.id}: the start event has no run settings`, {
        exitCode: EXIT.MISMATCH,
      });
    }
    const state = readJsonFile(join(dir, ARTIFACTS.state)) as State;
    const { progress, startedAt } = progressOf(dir, state);
    const policies = rec.mode === "meta" ? await reloadPolicies(rec, options.policies) : [];
    const engine = buildEngine(dir, loc.id, rec, state, progress, startedAt, policies, options);
    const announced = progress.announced_steps ?? engine.p.steps.length;
    return { engine, lock, calls: progress.calls, pausedAt: progress.paused_at, record: rec, announced };
  } catch (e) {
    lock.release();
    throw e;
  }
}

function buildEngine(
  dir: string,
  episodeId: string,
  rec: RunSettingsRecord,
  state: State,
  progress: CoreProgress,
  startedAt: string,
  policies: EngineSettings["policies"],
  options: AttachOptions,
): Engine {
  const redactor = new Redactor({ secrets: rec.secrets });
  const task = String(state.goal?.task ?? "");
  const settings = settingsFromRecord(rec, {
    episodeId,
    dir,
    task: redactor.unmask(task).value,
    redactedTask: task,
    loadedAdapter: externalAdapter(rec.using),
    policies,
    planner: rec.planner,
    onEvent: options.onEvent,
    notices: options.notices,
  });

  const plan = state.plan ?? (state.plan = { steps: [] });
  const outcomes = state.outcomes ?? (state.outcomes = { status: "pending" });
  outcomes.actions ??= [];
  outcomes.artifacts ??= [];
  const memory = state.memory ?? (state.memory = {});
  memory.facts ??= [];
  const recorder = new Recorder(dir, episodeId, {
    count: progress.events.count,
    lastEventId: progress.events.last_event_id,
    lastTimestamp: progress.events.last_timestamp,
  }, new ArtifactSink(dir, redactor));
  recorder.projectedActions = progress.projected_actions ?? null;
  return new Engine({
    settings,
    progress: {
      state,
      steps: plan.steps,
      planSource: plan.source ?? `agent:${rec.using}`,
      actions: outcomes.actions,
      facts: memory.facts as Engine["p"]["facts"],
      counters: progress.counters,
      evidence: new Map(progress.evidence.map((e: PolicyEvidence) => [e.policyId, e])),
      lastDiff: progress.last_diff,
      lastDirectivePolicy: progress.last_directive_policy,
      lastStepEventId: progress.last_step_event_id,
      startedAt,
      waitingMs: progress.waiting_ms,
      stepRedaction: new Map(),
      inputs: new Map(),
    },
    recorder,
    learnLog: recorder.sink.jsonl(ARTIFACTS.learn),
    adapter: externalAdapter(rec.using).plugin.create({
      config: {},
      args: [],
      workspace: rec.workspace,
      episode_dir: dir,
      secrets: rec.secrets,
    }) as Engine["adapter"],
    redactor,
    verifying: null,
  });
}
