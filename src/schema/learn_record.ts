/**
 * One line of `learn.jsonl` (`learn/1.0`). The contract does not show it;
 * noema follows the reference system's writer.
 *
 * @module
 */
import * as v from "valibot";
import { CONTRACT_VERSIONS } from "../version.ts";
import { looseObject, Timestamp } from "./common.ts";

/**
 * One learning proposal, e.g. a threshold tuning after a veto.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { LearnProposal } from "./learn_record.ts";
 * v.parse(LearnProposal, { proposal_id: "p:1", kind: "threshold_tune", status: "recorded",
 *   target: { path: "direction_min_confidence", from: 0.5, to: 0.55 } });
 * ```
 */
export const LearnProposal = looseObject({
  proposal_id: v.string(),
  kind: v.pipe(v.string(), v.description("e.g. threshold_tune.")),
  target: v.optional(looseObject({
    path: v.string(),
    from: v.unknown(),
    to: v.unknown(),
  })),
  rationale: v.optional(v.string()),
  confidence: v.optional(v.number()),
  status: v.optional(v.pipe(v.string(), v.description("recorded | scored | approved | applied | rejected."))),
});
/** One learning proposal. */
export type LearnProposal = v.InferOutput<typeof LearnProposal>;

/**
 * One `learn.jsonl` line.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { LearnRecord } from "./learn_record.ts";
 * v.parse(LearnRecord, { schema_version: "learn/1.0", id: "P@1:ep_1", episode_id: "ep_1", agent_id: "P@1",
 *   timestamp: "2026-01-01T00:00:00Z", payload: { proposal: [] } });
 * ```
 */
export const LearnRecord = looseObject({
  schema_version: v.literal(CONTRACT_VERSIONS.learn),
  id: v.string(),
  episode_id: v.string(),
  agent_id: v.pipe(v.string(), v.description('Policy id that the proposals are for, or "system".')),
  timestamp: Timestamp,
  payload: looseObject({
    policy_id: v.optional(v.string()),
    proposal: v.pipe(v.array(LearnProposal), v.description("The learning proposals.")),
    applied: v.optional(v.boolean()),
    scope: v.optional(v.string()),
  }),
});
/** One `learn.jsonl` line. */
export type LearnRecord = v.InferOutput<typeof LearnRecord>;
