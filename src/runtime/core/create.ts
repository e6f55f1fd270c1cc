/**
 * Creating an episode on disk: its first artifacts (`learn.jsonl`, the
 * `start` → `observe` → `interpret` → `plan` events, `state.json`) are written
 * in a hidden directory that is then renamed into place, so an episode
 * directory that exists always has a start event and a state.json, even if
 * the process is killed at any moment. Then the verification starts (the
 * workspace's pre-snapshot).
 *
 * @module
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../../errors.ts";
import type { PlanStep } from "../../schema/plan.ts";
import type { State } from "../../schema/state.ts";
import { DIR_MODE, FILE_MODE, fsyncDir } from "../../store/atomic.ts";
import { isDiskFull } from "../../store/disk_full.ts";
import { mkdirBelow, refuseSymlinks } from "../../store/nofollow.ts";
import { sweepStaleStaging } from "../../store/staging.ts";
import type { JsonlAppender } from "../../store/jsonl.ts";
import { ARTIFACTS } from "../../store/layout.ts";
import { acquireLock, type EpisodeLock } from "../../store/lock.ts";
import { CONTRACT_VERSIONS, NOEMA_VERSION } from "../../version.ts";
import { startVerification } from "../../verify/outcome.ts";
import { Engine } from "../engine.ts";
import { Recorder } from "../recorder.ts";
import { ArtifactSink } from "../artifact_sink.ts";
import type { RedactionReport } from "../redact.ts";
import { newCounters } from "../summary_builder.ts";
import { goalType, type PreparedEpisode } from "./prepare.ts";

/** A created episode: its engine (holding the recorder and learn log) and its lock. */
export interface CreatedEpisode {
  engine: Engine;
  lock: EpisodeLock;
}

/**
 * Writes a prepared episode's first artifacts and moves its directory into
 * place. On failure everything is closed and the staging directory removed.
 *
 * @example
 * ```ts
 * import { prepareEpisode } from "./prepare.ts";
 * import { createEpisode } from "./create.ts";
 * const { engine, lock } = await createEpisode(await prepareEpisode("x", {}));
 * ```
 */
export async function createEpisode(prep: PreparedEpisode): Promise<CreatedEpisode> {
  const { options, settings, assertions, snapshotRules, baseDir, redactor } = prep;
  const { episodeId, root, dir, workspace } = settings;
  // ---- Create the episode: its first artifacts (learn.jsonl, the start … plan events, state.json) are
  // written in a hidden directory that is then renamed into place, so an episode directory that exists
  // always has a start event and a state.json, even if the process is killed at any moment.
  const staging = makeStaging(root, episodeId);
  let lock: EpisodeLock | undefined, rec: Recorder | undefined, learnLog: JsonlAppender | undefined;
  let moved = false;
  try {
    lock = acquireLock(staging, "run");
    writeFileSync(join(staging, ARTIFACTS.learn), "", { mode: FILE_MODE, flag: "wx" });
    // Every artifact byte goes through the sink, which masks secrets.
    rec = new Recorder(staging, episodeId, undefined, new ArtifactSink(staging, redactor));
    learnLog = rec.sink.jsonl(ARTIFACTS.learn);
    const engine = writeFirstArtifacts(prep, rec, learnLog);
    moveIntoPlace(staging, dir, root);
    moved = true;
    rec.moveTo(dir);
    lock.moveTo(dir);
    engine.verifying = await startVerification({
      workspace,
      specs: assertions,
      policy: snapshotRules,
      episodeDir: dir,
      baseDir,
      redact: rec.sink.mask,
      onProgress: options.onSnapshotProgress,
    });
    return { engine, lock };
  } catch (e) {
    // Each let go even when another cannot be (closing flushes: on a full disk, that fails too).
    for (const close of [() => rec?.close(), () => learnLog?.close(), () => lock?.release()]) {
      try {
        close();
      } catch { /* the error that stopped the creation is the one to report */ }
    }
    if (!moved) rmSync(staging, { recursive: true, force: true }); // no `.tmp-<id>-<pid>` is left behind
    throw e;
  }
}

/** The hidden staging directory of a new episode (stale ones that killed runs left behind are swept first). */
function makeStaging(root: string, episodeId: string): string {
  mkdirBelow(join(root, "episodes"), root); // never through a planted `episodes -> /elsewhere`
  const staging = join(root, "episodes", `.tmp-${episodeId}-${process.pid}`);
  sweepStaleStaging(join(root, "episodes")); // staging dirs that killed runs left behind
  try {
    mkdirSync(staging, { mode: DIR_MODE });
  } catch (e) {
    if (isDiskFull(e)) throw e; // the disk, said as such (exit 11)
    throw new NoemaError("exists", `cannot create ${staging}: ${(e as Error).message}`, { exitCode: EXIT.ERROR });
  }
  return staging;
}

/** Renames the staging directory into place (removing it if that fails) and makes the rename durable. */
function moveIntoPlace(staging: string, dir: string, root: string): void {
  try {
    refuseSymlinks(dir, root);
    renameSync(staging, dir);
  } catch (e) {
    rmSync(staging, { recursive: true, force: true });
    if (e instanceof NoemaError) throw e;
    throw new NoemaError("exists", `cannot create ${dir}: ${(e as Error).message}`, { exitCode: EXIT.ERROR });
  }
  fsyncDir(join(root, "episodes"));
}

/**
 * Writes the opening events and the plan, builds the engine over them, and writes the first
 * state.json; the log is synced before the directory moves into place.
 */
function writeFirstArtifacts(prep: PreparedEpisode, rec: Recorder, learnLog: JsonlAppender): Engine {
  const { options, settings, adapter, plan, redactor } = prep;
  const emit = (phase: string, payload: Record<string, unknown>, opts?: Parameters<Recorder["emit"]>[2]) => {
    const e = rec.emit(phase, payload, opts);
    options.onEvent?.(e);
    return e;
  };
  const { startedAt, type } = writeOpening(prep, emit);

  const { steps, stepRedaction, planEvent, counters } = writePlan(prep, emit, rec, startedAt);
  const facts: { key: string; value: unknown; timestamp?: string; provenance?: string }[] = [];
  const actions: NonNullable<NonNullable<State["outcomes"]>["actions"]> = [];
  const state = initialState(prep, { startedAt, type, steps, actions, facts, planTimestamp: planEvent.timestamp });
  const engine = new Engine({
    settings,
    progress: {
      state,
      steps,
      planSource: plan.source,
      actions,
      facts,
      counters,
      evidence: new Map(),
      lastDiff: [],
      lastDirectivePolicy: null,
      lastStepEventId: planEvent.id,
      startedAt,
      waitingMs: 0,
      stepRedaction,
      inputs: new Map(plan.steps.map((step) => [step.id, step.inputs ?? {}])),
    },
    recorder: rec,
    learnLog,
    adapter,
    redactor,
    verifying: null,
  });
  engine.persist();
  rec.sync();
  return engine;
}

/** Emits one event (through the recorder, then to `onEvent`). */
type Emit = (phase: string, payload: Record<string, unknown>, opts?: Parameters<Recorder["emit"]>[2]) => {
  id: string;
  timestamp: string;
};

/** The `start` (settings included), `observe` and `interpret` events. */
function writeOpening(prep: PreparedEpisode, emit: Emit): { startedAt: string; type: string } {
  const { task, settings, plan, record } = prep;
  const { episodeId, mode, governance, workspace, loadedAdapter, policies } = settings;
  const s = settings;
  const start = emit("start", {
    task: s.redactedTask,
    episode_id: episodeId,
    mode,
    intuition_mode: s.intuitionMode,
    governance,
    failure_policy: s.failurePolicy,
    using: loadedAdapter.label,
    seed: s.seed,
    tags: s.tags,
    workspace,
    policies: policies.map((p) => p.id),
    noema_version: NOEMA_VERSION,
    contract: CONTRACT_VERSIONS,
    settings: record,
  }, { caused_by: null });
  const startedAt = start.timestamp;
  const observe = emit("observe", {
    snapshot: {
      task: s.redactedTask,
      seed: s.seed,
      tags: s.tags,
      using: loadedAdapter.label,
      workspace,
      state_path: ARTIFACTS.state,
    },
  }, { caused_by: null });
  const type = goalType(task);
  const hints: string[] = [];
  if (task.length > 320) hints.push("Consider chunking the task input before execution.");
  emit("interpret", { goal_type: type, task_chars: task.length, hints, step_count: plan.steps.length }, {
    faculty: "intuition",
    caused_by: observe.id,
  });

  return { startedAt, type };
}

/** The first `state.json`: goal, beliefs, the plan, empty memory and outcomes. */
function initialState(
  prep: PreparedEpisode,
  p: {
    startedAt: string;
    type: string;
    steps: PlanStep[];
    actions: NonNullable<NonNullable<State["outcomes"]>["actions"]>;
    facts: NonNullable<NonNullable<State["memory"]>["facts"]>;
    planTimestamp: string;
  },
): State {
  const s = prep.settings, plan = prep.plan;
  const { startedAt, type, steps, actions, facts } = p;
  const state: State = {
    version: CONTRACT_VERSIONS.state,
    state_schema_version: CONTRACT_VERSIONS.state_schema,
    episode: {
      id: s.episodeId,
      seed: s.seed,
      tags: s.tags,
      using: s.loadedAdapter.label,
      started_at: startedAt,
      intuition_mode: s.intuitionMode,
    },
    goal: { task: s.redactedTask, type },
    beliefs: [{
      statement: `The task is of type ${type}.`,
      confidence: 0.5,
      provenance: "interpret",
      timestamp: startedAt,
    }],
    plan: { steps, source: plan.source, updated_at: p.planTimestamp, rationale: plan.rationale },
    memory: { facts },
    outcomes: {
      status: "pending",
      actions,
      metrics: { task_score: 0, steps_completed: 0, steps_total: steps.length, duration_ms: 0 },
      artifacts: [],
      error: null,
    },
    links: { events: ARTIFACTS.events, learn: ARTIFACTS.learn },
  };
  return state;
}

/** The plan, its texts and inputs masked once (every later artifact sees masked values), and its `plan` event. */
function writePlan(prep: PreparedEpisode, emit: Emit, rec: Recorder, startedAt: string) {
  const { plan, redactor } = prep;
  // ---- Plan.
  const stepRedaction = new Map<string, RedactionReport>();
  // Step texts and inputs are masked once, here: the plan event, state.json and every later event see masked values.
  // One copy per step, its fields replaced where they are (the key order of the step).
  const steps: PlanStep[] = plan.steps.map((step) => {
    const masked: PlanStep = { ...step };
    masked.description = redactor.redactString(step.description);
    if (step.rationale !== undefined) masked.rationale = redactor.redactString(step.rationale);
    if (!step.inputs) return masked;
    const { value, report } = redactor.redact(step.inputs, "payload.input");
    stepRedaction.set(step.id, report);
    masked.inputs = value;
    return masked;
  });
  const planStarted = rec.now();
  const planEvent = emit("plan", Engine.planPayload(plan.source, steps, plan.rationale), {
    metrics: { started_at: planStarted, completed_at: rec.now(), duration_ms: 0 },
  });
  const counters = newCounters();
  counters.plan++;
  counters.planning_ms = Date.parse(planEvent.timestamp) - Date.parse(startedAt);
  return { steps, stepRedaction, planEvent, counters };
}
