/**
 * The episode core as the agent integrations use it: the types of
 * `src/runtime/core/episode_core.ts`, which external drivers (hooks,
 * `noema run --using claude-code`) call with one action at a time.
 *
 * @module
 */
import type { EpisodeCore } from "../runtime/core/episode_core.ts";

export type {
  CoreEnd as FinishOptions,
  Decision,
  ProposedAction,
  RecordedResult,
} from "../runtime/core/episode_core.ts";

/** An open episode that actions enter from outside. */
export type EpisodeHandle = EpisodeCore;
