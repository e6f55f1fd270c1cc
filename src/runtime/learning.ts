/**
 * Learning: after a veto, a proposal to tune the policy's
 * `direction_min_confidence`; recorded in `learn.jsonl`, and in `apply` mode
 * applied through a gate to the policy's snapshot under
 * `<root>/state/policies/<policy id>.json` (history, gates, revert handle).
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { CONTRACT_VERSIONS } from "../version.ts";
import { NoemaError } from "../errors.ts";
import type { LearnProposal, LearnRecord } from "../schema/learn_record.ts";
import { writeJsonAtomic } from "../store/atomic.ts";
import { readJsonFile } from "../store/json_file.ts";
import type { LearnMode } from "./settings.ts";

/** A policy's learned state. */
export interface PolicySnapshot {
  policy_id: string;
  tuning: { direction_min_confidence?: number; [key: string]: unknown };
  stats: { episodes: number };
  history: Record<string, unknown>[];
  gates: Record<string, { successes: number; min_successes: number; min_confidence: number; updated_at: string }>;
  updated_at: string;
}

/**
 * Path of a policy's snapshot: `<root>/state/policies/<id>.json`, with `/`
 * and spaces in the id replaced by `_`.
 *
 * @example
 * ```ts
 * import { policySnapshotPath } from "noema";
 * policySnapshotPath(".noema", "SqlGuard@1.0"); // ".noema/state/policies/SqlGuard@1.0.json"
 * ```
 */
export function policySnapshotPath(root: string, policyId: string): string {
  return join(root, "state", "policies", `${policyId.replace(/[/\\\s]/g, "_").replace(/^\.+/, "_")}.json`);
}

/**
 * Reads a policy's snapshot, or a fresh one.
 *
 * @example
 * ```ts
 * import { readPolicySnapshot } from "noema";
 * readPolicySnapshot(".noema", "SqlGuard@1.0").tuning;
 * ```
 */
export function readPolicySnapshot(root: string, policyId: string): PolicySnapshot {
  const path = policySnapshotPath(root, policyId);
  if (!existsSync(path)) {
    return {
      policy_id: policyId,
      tuning: {},
      stats: { episodes: 0 },
      history: [],
      gates: {},
      updated_at: new Date(0).toISOString(),
    };
  }
  const s = readJsonFile(path) as Partial<PolicySnapshot>;
  return {
    policy_id: policyId,
    tuning: s.tuning ?? {},
    stats: { episodes: s.stats?.episodes ?? 0 },
    history: Array.isArray(s.history) ? s.history : [],
    gates: s.gates ?? {},
    updated_at: s.updated_at ?? new Date(0).toISOString(),
  };
}

/** What an episode contributes to learning about one policy. */
export interface PolicyEvidence {
  policyId: string;
  policyVersion: string;
  /** Applied vetoes by this policy. */
  vetoes: number;
  /** Direction events of this policy. */
  directionEvents: number;
  /** Highest veto confidence. */
  confidence: number;
  /** Ids of the direction events with the vetoes. */
  eventIds: string[];
}

/** Settings of {@link learn}. */
export interface LearnSettings {
  root: string;
  episodeId: string;
  mode: LearnMode;
  /** Threshold in force per policy. */
  thresholdOf(policyId: string): number;
  /** Recurrences needed before a tuning is applied. @default {3} */
  minSuccesses: number;
  /** Confidence needed before a tuning is applied. @default {0.7} */
  minConfidence: number;
  success: boolean;
  now(): string;
}

/**
 * Builds the episode's learn records (one per vetoing policy) and, in
 * `apply` mode, updates the policies' snapshots through their gates.
 *
 * @example
 * ```ts
 * import { learn } from "noema";
 * // const { records } = learn([{ policyId: "SqlGuard@1.0", ... }], settings);
 * ```
 */
export function learn(
  evidence: readonly PolicyEvidence[],
  settings: LearnSettings,
): { records: LearnRecord[]; applied: number } {
  if (settings.mode === "off") return { records: [], applied: 0 };
  const records: LearnRecord[] = [];
  let applied = 0;
  for (const ev of evidence) {
    if (ev.vetoes === 0) continue;
    const { proposal, from, to } = thresholdProposal(ev, settings);
    const didApply = settings.mode === "apply" && applyOrRecordWhyNot(ev, proposal, from, to, settings);
    if (didApply) applied++;
    records.push(learnRecord(ev, proposal, didApply, settings));
  }
  return { records, applied };
}

/** A policy's threshold-tune proposal (status `recorded`): its minimum confidence up by 0.05, scored by veto rate. */
function thresholdProposal(
  ev: PolicyEvidence,
  settings: LearnSettings,
): { proposal: ThresholdProposal; from: number; to: number } {
  const from = settings.thresholdOf(ev.policyId);
  const to = Math.min(1, Math.round((from + 0.05) * 100) / 100);
  const vetoRate = Math.round((ev.vetoes / Math.max(1, ev.directionEvents)) * 10000) / 10000;
  const proposal: ThresholdProposal = {
    proposal_id: `${ev.policyId}:${settings.episodeId}:direction_min_confidence:${to}`,
    policy_version: ev.policyVersion,
    kind: "threshold_tune",
    target: { path: "direction_min_confidence", from, to },
    rationale: "Increase direction minimum confidence after veto.",
    evidence_ids: ev.eventIds,
    score_fn: "heuristic:veto_rate",
    score: vetoRate,
    confidence: ev.confidence,
    status: "recorded",
    metadata: { veto_rate: vetoRate, direction_events: ev.directionEvents, scorer: "heuristic" },
    accepted: false,
  };
  return { proposal, from, to };
}

/** A learn proposal under construction. */
type ThresholdProposal = LearnProposal & Record<string, unknown>;

/**
 * {@link applyThroughGate}, except that a snapshot noema refuses to write (a symbolic link planted at
 * `state/policies/<id>.json` or above it) leaves the proposal recorded, not applied, with the reason in its
 * `metadata.not_applied`: the episode still ends and is sealed.
 */
function applyOrRecordWhyNot(
  ev: PolicyEvidence,
  proposal: ThresholdProposal,
  from: number,
  to: number,
  settings: LearnSettings,
): boolean {
  try {
    return applyThroughGate(ev, proposal, from, to, settings);
  } catch (e) {
    if (!(e instanceof NoemaError) || e.code !== "unsafe_path") throw e;
    proposal.status = "recorded";
    proposal.accepted = false;
    delete proposal.revert_handle;
    (proposal.metadata as Record<string, unknown>).not_applied = e.message;
    return false;
  }
}

/**
 * `apply` mode: counts the recurrence in the policy's gate and, once the gate opens (enough
 * recurrences, enough confidence, a real change), applies the tuning to the policy's snapshot
 * (marking the proposal applied, with its revert handle). The snapshot's history records the
 * proposal either way. Returns whether the tuning was applied.
 */
function applyThroughGate(
  ev: PolicyEvidence,
  proposal: ThresholdProposal,
  from: number,
  to: number,
  settings: LearnSettings,
): boolean {
  let didApply = false;
  const snap = readPolicySnapshot(settings.root, ev.policyId);
  const now = settings.now();
  const gate = snap.gates.direction_min_confidence ??
    { successes: 0, min_successes: settings.minSuccesses, min_confidence: settings.minConfidence, updated_at: now };
  gate.successes += 1;
  gate.min_successes = settings.minSuccesses;
  gate.min_confidence = settings.minConfidence;
  gate.updated_at = now;
  snap.gates.direction_min_confidence = gate;
  (proposal.metadata as Record<string, unknown>).gate = { ...gate };
  if (gate.successes >= gate.min_successes && ev.confidence >= gate.min_confidence && to !== from) {
    const previous = snap.tuning.direction_min_confidence ?? null;
    snap.tuning.direction_min_confidence = to;
    proposal.status = "applied";
    proposal.accepted = true;
    proposal.revert_handle = { path: "direction_min_confidence", previous };
    gate.successes = 0;
    didApply = true;
  }
  snap.stats.episodes += 1;
  snap.history.push({
    ts: now,
    proposal_id: proposal.proposal_id,
    kind: proposal.kind,
    target: proposal.target,
    score: proposal.score,
    confidence: proposal.confidence,
    status: proposal.status,
    ...(didApply ? { revert_handle: proposal.revert_handle } : {}),
  });
  snap.updated_at = now;
  writeJsonAtomic(policySnapshotPath(settings.root, ev.policyId), snap, { root: settings.root });
  return didApply;
}

/** The learn.jsonl record of one vetoing policy: its basis and its proposal. */
function learnRecord(
  ev: PolicyEvidence,
  proposal: ThresholdProposal,
  didApply: boolean,
  settings: LearnSettings,
): LearnRecord {
  return {
    schema_version: CONTRACT_VERSIONS.learn,
    id: `${ev.policyId}:${settings.episodeId}`,
    episode_id: settings.episodeId,
    agent_id: ev.policyId,
    timestamp: settings.now(),
    payload: {
      id: `${ev.policyId}:${settings.episodeId}`,
      policy_id: ev.policyId,
      basis: { success: settings.success, vetoes: ev.vetoes, direction_events: ev.directionEvents },
      proposal: [proposal],
      applied: didApply,
      scope: "policy",
      ttl: null,
      approval: didApply ? "auto-applied" : "pending",
    },
  };
}
