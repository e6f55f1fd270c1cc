/**
 * The conversation an `llm` run saves in its episode (`llm/conversation.json`,
 * secrets masked) when it does not end with an answer: paused for approval
 * (what `approve|reject --resume` continues) or stopped by a failure (what
 * `noema run --continue` picks up in a new episode).
 *
 * @module
 */
import type { ModelMessage } from "ai";
import { EXIT, NoemaError } from "../errors.ts";
import { readJsonFile } from "../store/json_file.ts";
import type { PendingToolApproval } from "./hooks.ts";
import type { UsageTotals } from "./model_log.ts";

/** Where an episode keeps its saved conversation, relative to the episode directory. */
export const CONVERSATION_FILE = "llm/conversation.json";

/** The conversation an LLM episode saved. */
export interface SavedConversation {
  schema_version: string;
  /** Model turns used. */
  turns: number;
  /** The calls waiting for approval (none after a failure). */
  pending: PendingToolApproval[];
  /** Token usage so far (absent in conversations saved before it was kept). */
  usage?: UsageTotals;
  messages: ModelMessage[];
}

/**
 * Reads a saved conversation; a file that is not one is an error naming it and the field.
 *
 * @example
 * ```ts
 * import { readConversation } from "noema";
 * // const saved = readConversation(".noema/episodes/ep_1/llm/conversation.json");
 * ```
 */
export function readConversation(path: string): SavedConversation {
  const saved = readJsonFile(path);
  for (const field of ["messages", "pending"] as const) {
    if (!Array.isArray(saved[field])) {
      throw new NoemaError("bad_conversation", `${field}: expected a list: not a saved conversation`, {
        file: path,
        exitCode: EXIT.USAGE,
      });
    }
  }
  return saved as unknown as SavedConversation;
}
