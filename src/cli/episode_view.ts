/**
 * The data behind `noema view`: state, summary, the plan rebuilt from
 * events, counts, policy verdicts, the last events and the artifact paths,
 * gathered with ONE streaming pass over `events.jsonl` (memory grows with the
 * number of verdicts, not with the length of the log).
 *
 * @module
 */
import { existsSync, lstatSync, readdirSync, type Stats } from "node:fs";
import { dirname, join } from "node:path";
import { NoemaError } from "../errors.ts";
import { finalAnswer } from "../read/answer.ts";
import { episodePaths } from "../read/episode.ts";
import { type RunState, runState } from "../read/list.ts";
import { PlanProjector } from "../read/plan.ts";
import { type StderrTail, stderrTail } from "../read/stderr_tail.ts";
import { type StepDecision, StepDecisions } from "../read/step_decisions.ts";
import type { Plan } from "../schema/plan.ts";
import { readJsonFile } from "../store/json_file.ts";
import { readJsonl } from "../store/jsonl.ts";
import type { EpisodeLocation } from "../store/layout.ts";
import { verifyArtifacts } from "../store/integrity.ts";
import { eventSummary, msBetween } from "./format.ts";
import { calledAs } from "../called_as.ts";

/** A policy verdict: a `direction` event (a policy's advice) or a `governance` event (the decision on an action). */
export type Verdict =
  | {
    phase: "direction";
    timestamp: string | null;
    step_id: string | null;
    policy: string | null;
    kind: string | null;
    status: string | null;
    confidence: number | null;
    reason: string | null;
    /** For a policy that failed (threw, timed out, returned a bad verdict): what, and where (`file.ts:LINE:COL`). */
    error: PolicyError | null;
    /** `review` for a verdict on an action's result (a policy's `review`), else null (before the action). */
    stage: string | null;
  }
  | {
    phase: "governance";
    timestamp: string | null;
    step_id: string | null;
    decision: string | null;
    rule: string | null;
    message: string | null;
    policy_id: string | null;
    enforced: boolean | null;
    /** The decision came from a policy failure (`policy.failure:<id>`), not from a policy's veto. */
    failure: boolean;
    /** The failure, when `failure`. */
    error: PolicyError | null;
    /** `review` for the decision on an action's result, else null (the decision before the action). */
    stage: string | null;
    /** For a review: what the agent saw (`original`, `redacted`, `blocked`, `none`). */
    agent_saw: string | null;
    /** The checkpoint the run paused at for this verdict (the `run.checkpoint` that followed it), else null. */
    checkpoint_id: string | null;
  };

/** A policy failure as recorded in a direction or governance event. */
export interface PolicyError {
  /** `Error`, `TypeError`, `PolicyTimeout`, `InvalidVerdict`, … */
  type: string;
  /** The error's message. */
  message: string;
  /** Where it was thrown, `file.ts:LINE:COL`, when known. */
  at: string | null;
}

/** One line of the compact timeline. */
export interface TimelineEntry {
  /** The event's timestamp. */
  timestamp: string | null;
  /** Milliseconds since the episode's first event. */
  delta_ms: number | null;
  /** The event's phase. */
  phase: string;
  /** One-line summary of the payload. */
  summary: string;
}

/** An action that failed (an `act` event with `result_status: "error"`): why, and the tail of its program's stderr. */
export interface FailedAction {
  /** Its step. */
  step_id: string | null;
  /** `type: message` of its error, or its outcome. */
  error: string;
  /** The program's exit code, when it ran one. */
  exit_code: number | null;
  /** The last lines of the program's stderr, or null when it wrote none. */
  stderr: StderrTail | null;
}

/** Why a non-terminal run is waiting, from its last lifecycle `runtime` event. */
export interface Waiting {
  /** `event_type` of that event, e.g. `run.checkpoint` or `run.interrupt`. */
  event_type: string;
  /** Its `payload.status`, e.g. `paused`. */
  status: string | null;
  /** Its `payload.reason`. */
  reason: string | null;
  /** Its `payload.checkpoint_id`. */
  checkpoint_id: string | null;
  /** Its timestamp. */
  timestamp: string | null;
  /** What waits for approval (from a `run.checkpoint`): kind, step, reason, policy and the pending action. */
  pending: Record<string, unknown> | null;
}

/** Everything `noema view` shows; `noema view --json` prints it. */
export interface EpisodeView {
  episode_id: string;
  episode_dir: string;
  /** `terminal` when `summary.json` exists, else `non-terminal`. */
  lifecycle: "terminal" | "non-terminal";
  /** `outcomes.status` from `state.json` (`unknown` when unreadable). */
  status: string;
  /** `state.json`, or `null` when it cannot be read (see `problems`). */
  state: Record<string, unknown> | null;
  /** `summary.json`, or `null` for a non-terminal run. */
  summary: Record<string, unknown> | null;
  /** The plan rebuilt from `events.jsonl`, or `null` without a `plan` event. */
  plan: Plan | null;
  counts: {
    /** Events read. */
    events: number;
    /** Events per phase. */
    by_phase: Record<string, number>;
    /** `act` events. */
    actions: number;
    /** `direction` events (policy advice). */
    direction: number;
    /** `governance` events (decisions on actions). */
    governance: number;
    /**
     * Enforced governance vetoes by a policy's verdict (or, without governance events, applied direction vetoes); a
     * veto that asked for a human's decision counts as that decision (`approved`, `rejected`), not here.
     */
    vetoes: number;
    /** Steps a human approved (they then ran). */
    approved: number;
    /** Steps a human rejected. */
    rejected: number;
    /** Vetoes recorded but not enforced (`--governance audit`, or a rule set or verdict in audit mode): would-have-vetoed. */
    would_vetoes: number;
    /** Policies that failed (threw, timed out, returned a bad verdict): direction events with `reason: policy_failure`. */
    policy_failures: number;
    /** Lines of `events.jsonl` that could not be read (see `noema validate`). */
    damaged_lines: number;
    /** Results the policies' `review` redacted, blocked or passed on with hints (enforced review decisions). */
    reviews: { redacted: number; blocked: number; hinted: number };
  };
  /** Every direction and governance verdict, in order. */
  verdicts: Verdict[];
  /** The decisions humans took on steps that waited for approval (who, the note), in order. */
  decisions: StepDecision[];
  /** The last {@link FAILED_KEPT} failed actions, in order, with the tail of their stderr. */
  failed_actions: FailedAction[];
  /** The last {@link TIMELINE_LENGTH} events, summarized. */
  timeline: TimelineEntry[];
  /** For a non-terminal run: its last lifecycle event (pause, interrupt…), or null. */
  waiting: Waiting | null;
  /** Where the run is now: terminal, running, waiting_for_approval, paused, crashed or crashed_while_sealing. */
  run_state: RunState;
  /** For a running run: milliseconds since it started. */
  elapsed_ms?: number;
  /** Values from the `start` event (mode, adapter, intuition mode) for runs without a summary. */
  start: {
    timestamp: string | null;
    mode: string | null;
    using: string | null;
    intuition_mode: string | null;
    /** How many policies the run was started with (its recorded settings), or null when not recorded. */
    policies?: number | null;
  } | null;
  /** Timestamp of the last event. */
  last_event_at: string | null;
  /** The run's final message (its `terminate` event's), or null before the run ended. */
  message: string | null;
  /** An agent's final answer (the `terminate` event's `answer`, e.g. an `llm` run's last model text; see `finalAnswer`), or null. */
  answer: string | null;
  /** Problems met while reading (unreadable state.json, damaged event lines…): `file[:line]: message`. */
  problems: string[];
  /**
   * For a sealed episode (it has `manifest.json`): the files that no longer match the manifest, as `noema verify`
   * finds them (a changed, missing or unlisted file, a manifest that is malformed or names another episode; the
   * signature is `noema verify`'s to check), `[]` when they all match; null without a manifest.
   */
  tampered: { file: string; kind: string; message: string }[] | null;
  /** Absolute artifact paths; `null` when the file does not exist. */
  paths: {
    events: string | null;
    learn: string | null;
    state: string | null;
    summary: string | null;
    manifest: string | null;
  };
}

/** Number of events kept for the timeline. */
export const TIMELINE_LENGTH = 20;
/** Number of failed actions kept (the last ones). */
export const FAILED_KEPT = 5;

const str = (x: unknown): string | null => (typeof x === "string" ? x : null);
const num = (x: unknown): number | null => (typeof x === "number" ? x : null);
const rec = (x: unknown): Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x) ? x as Record<string, unknown> : {};

/** A policy failure recorded in an event's `error` field, or null when there is none. */
function policyError(x: unknown): PolicyError | null {
  const e = rec(x);
  if (typeof e.message !== "string" && typeof e.type !== "string") return null;
  return { type: str(e.type) ?? "Error", message: str(e.message) ?? "", at: str(e.at) };
}

/** A JSON artifact that may be absent (null); an unreadable one is a problem, not a throw. */
function readOptional(path: string, problems: string[]): Record<string, unknown> | null {
  if (!existsSync(path)) return null;
  try {
    return readJsonFile(path, path, { noFollow: true });
  } catch (e) {
    if (!(e instanceof NoemaError)) throw e;
    problems.push(e.message);
    return null;
  }
}

/** What the one pass over `events.jsonl` gathers. */
interface EventPass {
  projector: PlanProjector;
  decisions: StepDecisions;
  byPhase: Record<string, number>;
  verdicts: Verdict[];
  failed: FailedAction[];
  ring: TimelineEntry[];
  events: number;
  actions: number;
  direction: number;
  governance: number;
  govVetoes: number;
  wouldVetoes: number;
  reviews: { redacted: number; blocked: number; hinted: number };
  dirVetoes: number;
  damaged: number;
  failures: number;
  firstTs: string | null;
  lastTs: string | null;
  waiting: Waiting | null;
  start: EpisodeView["start"];
  message: string | null;
  answer: string | null;
}

/**
 * Gathers the view of one episode, reading `events.jsonl` once, as a stream.
 * Damaged event lines are counted and reported in `problems`, not thrown.
 *
 * @example
 * ```ts
 * import { locateEpisode } from "../store/layout.ts";
 * import { buildEpisodeView } from "./episode_view.ts";
 * const view = buildEpisodeView(locateEpisode("ep_01K9RBBMXXRSFWR49SXFGF4SPR"));
 * console.log(view.counts.by_phase);
 * ```
 */
export function buildEpisodeView(loc: EpisodeLocation): EpisodeView {
  const paths = episodePaths(loc.dir);
  const problems: string[] = [];
  const state = existsSync(paths.state)
    ? readOptional(paths.state, problems)
    : (problems.push(`${paths.state}: file not found`), null);
  const terminal = existsSync(paths.summary);
  const summary = terminal ? readOptional(paths.summary, problems) : null;
  const pass = readEvents(paths.events, problems);

  const outcomes = rec(state?.outcomes);
  const exists = (p: string) => (existsSync(p) ? p : null);
  const decisions = pass.decisions.all();
  const decided = new Set(decisions.map((d) => d.checkpoint_id));
  // The vetoes that asked for a human's decision (each at its own checkpoint): the decision is shown and counted
  // instead. One asked again and not decided yet stays a veto.
  const decidedVetoes =
    pass.verdicts.filter((x) =>
      x.phase === "governance" && x.decision === "veto" && x.enforced !== false && !x.failure &&
      x.checkpoint_id !== null && decided.has(x.checkpoint_id)
    ).length;
  return {
    episode_id: loc.id,
    episode_dir: loc.dir,
    lifecycle: terminal ? "terminal" : "non-terminal",
    status: str(outcomes.status) ?? "unknown",
    state,
    summary,
    plan: pass.projector.plan(),
    counts: {
      events: pass.events,
      by_phase: pass.byPhase,
      actions: pass.actions,
      direction: pass.direction,
      governance: pass.governance,
      reviews: pass.reviews,
      vetoes: pass.governance > 0 ? pass.govVetoes - decidedVetoes : pass.dirVetoes,
      approved: decisions.filter((d) => d.decision === "approved").length,
      rejected: decisions.filter((d) => d.decision === "rejected").length,
      would_vetoes: pass.wouldVetoes,
      policy_failures: pass.failures,
      damaged_lines: pass.damaged,
    },
    verdicts: pass.verdicts,
    decisions,
    failed_actions: pass.failed,
    timeline: pass.ring,
    waiting: terminal ? null : pass.waiting,
    ...runState(
      loc.dir,
      terminal,
      str(outcomes.status) ?? "unknown",
      str(rec(state?.episode).started_at) ?? pass.firstTs,
    ),
    start: pass.start,
    last_event_at: pass.lastTs,
    message: pass.message,
    answer: finalAnswer(
      pass.answer,
      pass.message,
      str(rec(state?.episode).using) ?? pass.start?.using,
      outcomes.status,
    ),
    problems,
    tampered: existsSync(paths.manifest) ? tamperedFiles(paths.manifest) : null,
    paths: {
      events: exists(paths.events),
      learn: exists(paths.learn),
      state: exists(paths.state),
      summary: exists(paths.summary),
      manifest: exists(paths.manifest),
    },
  };
}

/** The issues of `noema verify` that say the files no longer match the manifest (errors; the signature left out). */
const MISMATCH = new Set(["hash_mismatch", "size_mismatch", "missing", "unlisted", "unsafe_path", "bad_manifest"]);

/** The files of a sealed episode that no longer match its manifest (see {@link EpisodeView.tampered}). */
function tamperedFiles(manifest: string): { file: string; kind: string; message: string }[] {
  // Hashing every file is `noema verify`'s cost; `serve` asks on each request, so an answer is kept while no file of
  // the episode changed its size, time or name (a sealed episode's files do not change unless someone changes them).
  const dir = dirname(manifest), seen = filesSignature(dir), kept = TAMPERED.get(dir);
  if (kept && kept.seen === seen) return kept.found;
  const report = verifyArtifacts(manifest, { key: null });
  const found = report.issues
    .filter((i) => i.severity === "error" && (MISMATCH.has(i.kind) || i.kind === "wrong_episode"))
    .map((i) => ({ file: i.file, kind: i.kind, message: i.message }));
  if (TAMPERED.size >= 256) TAMPERED.delete(TAMPERED.keys().next().value!);
  TAMPERED.set(dir, { seen, found });
  return found;
}

/** {@link tamperedFiles}' answers by episode directory, with the signature of the files they were found for. */
const TAMPERED = new Map<string, { seen: string; found: { file: string; kind: string; message: string }[] }>();

/** How {@link filesSignature} looks at one entry: its `lstat`, or undefined when it is gone. */
export type EntryStat = (path: string) => Pick<Stats, "size" | "mtimeMs" | "ctimeMs" | "ino"> | undefined;

/**
 * Every file under `dir` with its size, modification time and inode: what changes when a file is changed. The
 * episode may be written meanwhile (`view --follow`): an entry gone between the listing and its `lstat` (a run
 * releasing its lock as it ends, a temporary file renamed into place) is left out, as it is not there any more, and a
 * folder gone while the listing walked it makes the listing start again (three times at most).
 *
 * @example
 * ```ts
 * import { filesSignature } from "./episode_view.ts";
 * filesSignature(".noema/episodes/ep_1") === filesSignature(".noema/episodes/ep_1"); // true: nothing changed
 * ```
 */
export function filesSignature(
  dir: string,
  stat: EntryStat = (path) => lstatSync(path, { throwIfNoEntry: false }),
): string {
  for (let attempt = 1;; attempt++) {
    try {
      const parts: string[] = [];
      for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
        const path = join(entry.parentPath, entry.name);
        const st = stat(path);
        if (st !== undefined) parts.push(`${path}\0${st.size}\0${st.mtimeMs}\0${st.ctimeMs}\0${st.ino}`);
      }
      return parts.sort().join("\n");
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOENT" || attempt === 3) throw e;
    }
  }
}

/** Streams `events.jsonl` once; damaged lines are counted, the first five named in `problems`. */
function readEvents(path: string, problems: string[]): EventPass {
  const pass: EventPass = {
    projector: new PlanProjector(),
    decisions: new StepDecisions(),
    byPhase: {},
    verdicts: [],
    failed: [],
    ring: [],
    events: 0,
    actions: 0,
    direction: 0,
    governance: 0,
    reviews: { redacted: 0, blocked: 0, hinted: 0 },
    govVetoes: 0,
    wouldVetoes: 0,
    dirVetoes: 0,
    damaged: 0,
    failures: 0,
    firstTs: null,
    lastTs: null,
    waiting: null,
    start: null,
    message: null,
    answer: null,
  };
  if (!existsSync(path)) {
    problems.push(`${path}: file not found`);
    return pass;
  }
  for (const entry of readJsonl(path, { noFollow: true })) {
    if (entry.problem) {
      pass.damaged++;
      if (pass.damaged <= 5) problems.push(`${path}:${entry.line}: ${entry.message}`);
      continue;
    }
    passEvent(pass, entry.value);
  }
  if (pass.damaged > 5) problems.push(`${path}: ${pass.damaged - 5} more damaged lines (run ${calledAs()} validate)`);
  return pass;
}

/** Folds one event into the pass: counts, times, the plan, the start, a verdict or a wait, the timeline. */
function passEvent(pass: EventPass, e: Record<string, unknown>): void {
  pass.events++;
  const phase = typeof e.phase === "string" ? e.phase : "?";
  pass.byPhase[phase] = (pass.byPhase[phase] ?? 0) + 1;
  const ts = str(e.timestamp);
  pass.firstTs ??= ts;
  if (ts !== null) pass.lastTs = ts;
  const payload = rec(e.payload);
  pass.projector.add(e);
  pass.decisions.add(e);
  if (phase === "start" && pass.start === null) {
    pass.start = {
      timestamp: ts,
      mode: str(payload.mode),
      using: str(payload.using) ?? str(payload.adapter),
      intuition_mode: str(payload.intuition_mode),
      policies: Array.isArray(rec(payload.settings).policies)
        ? (rec(payload.settings).policies as unknown[]).length
        : null,
    };
  }
  if (phase === "act") {
    pass.actions++;
    if (payload.result_status === "error") passFailed(pass, payload);
  }
  if (phase === "terminate") [pass.message, pass.answer] = [str(payload.message), str(payload.answer)];
  if (phase === "direction") {
    passDirection(pass, e, payload, ts);
  } else if (phase === "governance") {
    passGovernance(pass, payload, ts);
  } else if (phase === "runtime" && typeof e.event_type === "string" && e.event_type !== "run.state_projection") {
    if (e.event_type === "run.checkpoint") passCheckpoint(pass, payload);
    pass.waiting = {
      event_type: e.event_type,
      status: str(payload.status),
      reason: str(payload.reason) ?? str((payload.pending as Record<string, unknown> | undefined)?.reason),
      checkpoint_id: str(payload.checkpoint_id),
      timestamp: ts,
      pending: typeof payload.pending === "object" && payload.pending !== null
        ? payload.pending as Record<string, unknown>
        : null,
    };
  }
  pass.ring.push({ timestamp: ts, delta_ms: msBetween(pass.firstTs, ts), phase, summary: eventSummary(e) });
  if (pass.ring.length > TIMELINE_LENGTH) pass.ring.shift();
}

/** A failed action: its error and the tail of its program's stderr (the last {@link FAILED_KEPT} are kept). */
function passFailed(pass: EventPass, payload: Record<string, unknown>): void {
  const output = rec(payload.output), error = rec(payload.error);
  pass.failed.push({
    step_id: str(payload.step_id),
    error: typeof error.message === "string"
      ? `${str(error.type) ?? "Error"}: ${error.message}`
      : str(payload.outcome) ?? "error",
    exit_code: num(payload.exit_code) ?? num(output.exit_code),
    stderr: stderrTail(output.stderr),
  });
  if (pass.failed.length > FAILED_KEPT) pass.failed.shift();
}

/** A direction event: its verdict, an applied veto, a policy failure. */
function passDirection(
  pass: EventPass,
  e: Record<string, unknown>,
  payload: Record<string, unknown>,
  ts: string | null,
): void {
  pass.direction++;
  const kind = str(payload.kind), status = str(payload.status);
  if (kind === "veto" && status === "applied") pass.dirVetoes++;
  const error = str(payload.reason) === "policy_failure"
    ? policyError(payload.error) ?? {
      type: "Error",
      message: "",
      at: null,
    }
    : null;
  if (error) pass.failures++;
  pass.verdicts.push({
    phase: "direction",
    timestamp: ts,
    step_id: str(payload.step_id),
    policy: str(payload.policy) ?? str(payload.policy_id) ?? str(e.agent_id),
    kind,
    status,
    confidence: num(payload.confidence),
    reason: str(payload.reason),
    error,
    stage: str(payload.stage),
  });
}

/** A governance event: its verdict, and an enforced veto that is not a policy failure. */
function passGovernance(pass: EventPass, payload: Record<string, unknown>, ts: string | null): void {
  pass.governance++;
  const decision = str(payload.decision);
  const enforced = typeof payload.enforced === "boolean" ? payload.enforced : null;
  const rule = str(payload.rule_id) ?? str(payload.rule);
  const failure = (rule?.startsWith("policy.failure:") || rule?.startsWith("review.failure:")) ?? false;
  if (decision === "veto" && enforced !== false && !failure) pass.govVetoes++;
  if (decision === "veto" && enforced === false) pass.wouldVetoes++;
  if (str(payload.stage) === "review" && enforced !== false) {
    if (decision === "redact") pass.reviews.redacted++;
    else if (decision === "block") pass.reviews.blocked++;
    else if (decision === "hint") pass.reviews.hinted++;
  }
  pass.verdicts.push({
    phase: "governance",
    timestamp: ts,
    step_id: str(payload.step_id),
    decision,
    rule,
    message: str(payload.message),
    policy_id: str(payload.policy_id),
    enforced,
    failure,
    error: failure ? policyError(payload.error) : null,
    stage: str(payload.stage),
    agent_saw: str(payload.agent_saw),
    checkpoint_id: null,
  });
}

/** A `run.checkpoint`: the step's latest governance verdict is the one it paused for (and a decision answers). */
function passCheckpoint(pass: EventPass, payload: Record<string, unknown>): void {
  const checkpoint = str(payload.checkpoint_id);
  const step = str(rec(payload.pending).step_id);
  if (checkpoint === null || step === null) return;
  for (let i = pass.verdicts.length - 1; i >= 0; i--) {
    const x = pass.verdicts[i];
    if (x.phase !== "governance" || x.step_id !== step) continue;
    if (x.checkpoint_id === null) x.checkpoint_id = checkpoint;
    return;
  }
}
