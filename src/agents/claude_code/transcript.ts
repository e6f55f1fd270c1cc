/**
 * What Claude Code's transcript (`transcript_path`, JSONL) says about calls
 * that never ran: the text of their `tool_result` (the user's "No" at the
 * permission prompt, a `permissions.deny` rule…), so that noema records who
 * stopped them. Only the transcript's last 8 MiB are read.
 *
 * @module
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { textHead } from "../../text_head.ts";

const TAIL_BYTES = 8 * 1024 * 1024;

function tail(path: string): string {
  const fd = openSync(path, "r");
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return "";
    const length = Math.min(st.size, TAIL_BYTES);
    const buf = new Uint8Array(length);
    readSync(fd, buf, 0, length, st.size - length);
    return new TextDecoder().decode(buf);
  } finally {
    closeSync(fd);
  }
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((c) => (typeof c?.text === "string" ? c.text : "")).filter(Boolean).join(" ");
  }
  return "";
}

/**
 * The results the transcript holds for `ids`, by call id (first 500
 * characters of their text). A missing or unreadable transcript gives none.
 *
 * @example
 * ```ts
 * import { transcriptResults } from "./transcript.ts";
 * transcriptResults("/home/me/.claude/projects/p/s.jsonl", ["toolu_1"]).get("toolu_1"); // "The user doesn't want to proceed…"
 * ```
 */
export function transcriptResults(path: string, ids: readonly string[]): Map<string, string> {
  const found = new Map<string, string>();
  const wanted = new Set(ids);
  let text: string;
  try {
    text = tail(path);
  } catch {
    return found;
  }
  for (const line of text.split("\n")) {
    if (!line.includes("tool_result")) continue;
    let entry: { message?: { content?: unknown } };
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // the first, cut line
    }
    const content = entry.message?.content;
    if (!Array.isArray(content)) continue;
    for (const block of content) {
      if (block?.type !== "tool_result" || !wanted.has(block.tool_use_id)) continue;
      found.set(block.tool_use_id, textHead(textOf(block.content).replace(/\s+/g, " ").trim(), 500));
    }
  }
  return found;
}
