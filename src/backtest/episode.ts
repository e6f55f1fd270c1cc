/**
 * Backtesting one recorded episode: its event log is replayed event by event
 * (`replayRun`, the scan `resume` rebuilds a run with); at each
 * `action_candidate` the state snapshot the policies saw is rebuilt from the
 * events before it (as `resume` does: `refreshState` over `state.json`), the
 * candidate policies are consulted with it, in their workers with the
 * recorded timeout, and the decision is compared with the recorded
 * `governance` event of that action.
 *
 * Nothing is written: the episode's files are only read.
 *
 * @module
 */
import { join } from "node:path";
import type { PolicyState, PolicyStep } from "../plugins/api.ts";
import { deepFreeze, frozenJsonCopy } from "../plugins/freeze.ts";
import type { LoadedPolicy } from "../plugins/loader.ts";
import type { RunSettingsRecord } from "../runtime/core/options.ts";
import { StateSnapshot } from "../runtime/core/snapshot.ts";
import { displayCommand } from "../runtime/core/command.ts";
import { type RebuiltRun, replayEntries, replayRun } from "../runtime/rebuild.ts";
import type { JsonlEntry } from "../store/jsonl.ts";
import { refreshState } from "../runtime/resume.ts";
import type { State } from "../schema/state.ts";
import { readJsonFile } from "../store/json_file.ts";
import { ARTIFACTS } from "../store/layout.ts";
import type { CandidateSet } from "./candidates.ts";
import { type CandidateDecision, consultCandidates } from "./consult.ts";
import { recordedVerdict, type Verdict } from "./verdict.ts";
import { clipText } from "../text_head.ts";

/** One recorded proposed action, with its recorded and candidate decisions. */
export interface ActionBacktest {
  episode_id: string;
  step_id: string;
  action_candidate_id: string;
  tool: string;
  /** The action's input as recorded (masked), short. */
  input_excerpt: string;
  recorded: { verdict: Verdict; decision: string; rule: string; policy_id: string | null; message: string };
  candidate: CandidateDecision;
}

/** An episode to backtest: its directory, or its event log's lines and its `state.json` read elsewhere (a store). */
export type EpisodeInput = { dir: string } | { events: Iterable<JsonlEntry>; state: Record<string, unknown> };

/** What backtesting one episode gave, besides its actions. */
export interface EpisodeBacktest {
  episode_id: string;
  /** Why the episode was left out (minimal mode, governance off, a policy that cannot load…). */
  skipped?: string;
  /** Actions compared. */
  actions: number;
  /** The run stopped at a block the candidate set lets through: what came after was never proposed. */
  not_reached: boolean;
  /** Recorded policies whose file changed since the episode (they ran as they are now). */
  changed: string[];
}

/** Where the replay stands: the recorded settings, the candidate set, the snapshot, the last action. */
interface Replay {
  id: string;
  rec: RunSettingsRecord;
  policies: LoadedPolicy[];
  state: State;
  snapshot: StateSnapshot;
  thresholds: Map<string, number>;
  directions: Record<string, unknown>[];
  pending: { action: Omit<ActionBacktest, "recorded">; directions: Record<string, unknown>[] } | null;
  /** The recorded run's `outcomes.status` (vetoed or pending: it stopped at a block). */
  status: string;
  /** Recorded policies whose file changed since the episode. */
  changed: string[];
  /** The log ends at a checkpoint (a pause no resume followed). */
  paused: boolean;
  last: { recorded: Verdict; candidate: Verdict } | null;
}

const EXCERPT_CHARS = 160;

function excerpt(input: Record<string, unknown>): string {
  const text = displayCommand(input, EXCERPT_CHARS + 1);
  return clipText(text, EXCERPT_CHARS);
}

/** The action before the policies' interventions (the candidate event records it patched): the diffs undone. */
function unpatched(input: Record<string, unknown>, directions: readonly Record<string, unknown>[]) {
  const out = { ...input };
  for (const d of [...directions].reverse()) {
    if (d.status !== "applied" || d.kind !== "intervention" || !Array.isArray(d.diff)) continue;
    for (const x of [...(d.diff as { key: string; before: unknown; after: unknown }[])].reverse()) {
      if (x.before === null || x.before === undefined) delete out[x.key];
      else out[x.key] = x.before;
    }
  }
  return out;
}

/** The start event: the recorded settings and the candidate set, or why the episode is left out. */
async function open(
  id: string,
  from: EpisodeInput,
  payload: Record<string, unknown>,
  candidates: CandidateSet,
): Promise<Replay | string> {
  const rec = payload.settings as RunSettingsRecord | undefined;
  if (!rec || typeof rec !== "object" || !Array.isArray(rec.policies)) {
    return "its start event records no run settings";
  }
  if (rec.mode !== "meta") return "minimal mode: no policy was consulted";
  if (rec.governance === "off") return "governance off: no decision was recorded";
  const c = await candidates.forEpisode(rec);
  if (c.skip !== undefined) return c.skip;
  const state =
    ("dir" in from ? readJsonFile(join(from.dir, ARTIFACTS.state), `${id}/${ARTIFACTS.state}`) : from.state) as State;
  return {
    status: String(state.outcomes?.status ?? ""),
    changed: c.changed,
    id,
    rec,
    policies: c.policies,
    state,
    snapshot: new StateSnapshot(state),
    thresholds: new Map(),
    directions: [],
    pending: null,
    paused: false,
    last: null,
  };
}

/** An `action_candidate` event: the snapshot as of the events before it, and the candidate set's decision. */
async function propose(r: Replay, p: Record<string, unknown>, before: () => RebuiltRun | null): Promise<void> {
  const built = before();
  const inner = (p.payload ?? {}) as Record<string, unknown>;
  const stepId = String(inner.step_id ?? "");
  const directions = r.directions.filter((d) => d.step_id === stepId);
  r.directions = [];
  const steps = built?.steps ?? [];
  if (built) refreshState(r.state, steps, built);
  const found = steps.findIndex((s) => s.id === stepId);
  const index = Math.max(0, found);
  const step = found >= 0 ? steps[found] : undefined;
  const stepView: PolicyStep = Object.freeze({
    id: stepId,
    kind: String(step?.kind ?? "act"),
    description: String(step?.description ?? ""),
    index,
    total: steps.length,
    inputs: deepFreeze(step?.inputs ?? {}),
  });
  const input = unpatched((inner.input ?? {}) as Record<string, unknown>, directions);
  const action = { kind: String(p.kind ?? "adapter"), tool: String(inner.tool ?? ""), input };
  const view = (a: typeof action): PolicyState =>
    r.snapshot.view(
      Object.freeze({ ...a, input: frozenJsonCopy(a.input), command: displayCommand(a.input) }),
      stepView,
      { workspace: r.rec.workspace },
    );
  const candidate = await consultCandidates(r.policies, action, view, {
    rec: r.rec,
    thresholds: r.thresholds,
  });
  r.pending = {
    action: {
      episode_id: r.id,
      step_id: stepId,
      action_candidate_id: String(p.action_candidate_id),
      tool: action.tool,
      input_excerpt: excerpt(input),
      candidate,
    },
    directions,
  };
}

/**
 * Backtests one episode: `onAction` receives each compared action, in the order they were proposed.
 *
 * @example
 * ```ts
 * import { backtestEpisode } from "./episode.ts";
 * // const r = await backtestEpisode("ep_1", { dir: ".noema/episodes/ep_1" }, set, (a) => console.log(a.candidate.verdict));
 * ```
 */
export async function backtestEpisode(
  id: string,
  from: EpisodeInput,
  candidates: CandidateSet,
  onAction: (a: ActionBacktest) => void,
): Promise<EpisodeBacktest> {
  const result: EpisodeBacktest = { episode_id: id, actions: 0, not_reached: false, changed: [] };
  let r: Replay | null = null;
  const replay = "dir" in from ? replayRun(from.dir) : replayEntries(from.events, `${id}/${ARTIFACTS.events}`);
  for (const { event, before } of replay) {
    const p = (event.payload ?? {}) as Record<string, unknown>;
    if (event.phase === "start" && r === null) {
      const opened = await open(id, from, p, candidates);
      if (typeof opened === "string") return { ...result, skipped: opened };
      r = opened;
      result.changed = r.changed;
    }
    if (r === null) continue;
    if (event.event_type === "run.checkpoint" || event.event_type === "run.resume") {
      r.paused = event.event_type === "run.checkpoint";
    } else if (event.phase === "direction") {
      r.directions.push(p);
      if (typeof p.threshold === "number") r.thresholds.set(String(p.policy_id ?? p.policy), p.threshold);
    } else if (event.phase === "action_candidate") {
      await propose(r, p, before);
    } else if (event.phase === "governance" && p.stage === undefined && r.pending) {
      if (p.action_candidate_id !== r.pending.action.action_candidate_id) continue;
      const recorded = {
        verdict: recordedVerdict(p, r.pending.directions),
        decision: String(p.decision),
        rule: String(p.rule ?? ""),
        policy_id: typeof p.policy_id === "string" ? p.policy_id : null,
        message: String(p.message ?? ""),
      };
      const { candidate, ...proposed } = r.pending.action;
      const action: ActionBacktest = { ...proposed, recorded, candidate };
      r.pending = null;
      r.last = { recorded: recorded.verdict, candidate: action.candidate.verdict };
      result.actions++;
      onAction(action);
    }
  }
  // The run stopped at a block the candidate set lets through (it ended vetoed, or waits at its checkpoint): what
  // came after was never proposed. An agent session goes on after a denied call: its later calls were compared.
  const last = r?.last;
  result.not_reached = last !== null && last !== undefined && last.recorded !== "allow" && last.candidate === "allow" &&
    (r!.status === "vetoed" || (r!.status === "pending" && r!.paused));
  return result;
}
