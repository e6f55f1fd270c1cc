/**
 * What a search finds inside an episode's `events.jsonl`: the one place that
 * says which of an event's JSON fields are searched, and as what. `noema
 * serve` searches the root's files with it, and the shared stores search
 * their stored event lines with it (`src/shared_store/`), so a run is
 * searched the same wherever it is.
 *
 * Searched, case-insensitive, as written: a `start` event's task (`task`), an
 * `act` event's tool input and output (`input`, `output`: the excerpts the
 * event keeps; the source is the tool), a `direction` or `governance` event's
 * reason (`reason`: the advice, reason, message or error; the source is the
 * policy or rule). A field that holds an object (a tool's input `{"argv": […]}`,
 * its output `{"stdout": …}`) is searched in its strings as written, joined by
 * spaces, never in its keys. Keys, ids, times and every other field are not
 * searched: text found only there is no hit.
 *
 * A line is parsed only when its raw JSON text holds the needle as JSON
 * writes it ({@link jsonNeedle}): a fast filter, then the fields decide.
 *
 * @module
 */
import { asRecord } from "../json.ts";

/** Where in a run the text was found. */
export type SearchField = "task" | "input" | "output" | "reason";

/** One place the text was found inside an event. */
export interface TextHit {
  field: SearchField;
  /** The step of the tool call or verdict, null for the task. */
  step_id: string | null;
  /** The tool (an input or output) or the policy or rule (a reason), else null. */
  source: string | null;
  /** Up to 80 characters before the match, the match as written, up to 80 after. */
  before: string;
  match: string;
  after: string;
}

/** A hit and the line of `events.jsonl` it is in (1-based, as the store's `seq`). */
export interface LineHit extends TextHit {
  seq: number;
}

const CONTEXT = 80;

/**
 * The hit in `text` around its first match of `lower` (the query in lower case), or null.
 *
 * @example
 * ```ts
 * import { hitIn } from "./event_search.ts";
 * hitIn("Deploy the app", "the")?.match; // "the"
 * ```
 */
export function hitIn(text: string, lower: string): Pick<TextHit, "before" | "match" | "after"> | null {
  const at = text.toLowerCase().indexOf(lower);
  if (at < 0) return null;
  const end = at + lower.length;
  return {
    before: (at > CONTEXT ? "…" : "") + text.slice(Math.max(0, at - CONTEXT), at),
    match: text.slice(at, end),
    after: text.slice(end, end + CONTEXT) + (text.length > end + CONTEXT ? "…" : ""),
  };
}

/**
 * The query as it appears inside a JSON string of an event line, in lower case: what a line must hold to be parsed.
 *
 * @example
 * ```ts
 * import { jsonNeedle } from "./event_search.ts";
 * jsonNeedle('Say "Hi"'); // 'say \\"hi\\"'
 * ```
 */
export function jsonNeedle(query: string): string {
  return JSON.stringify(query).slice(1, -1).toLowerCase();
}

/** The strings inside `x`, in order (not its keys, numbers or booleans). */
function leaves(x: unknown, out: string[]): string[] {
  if (typeof x === "string") out.push(x);
  else if (Array.isArray(x)) { for (const v of x) leaves(v, out); }
  else if (x !== null && typeof x === "object") { for (const v of Object.values(x)) leaves(v, out); }
  return out;
}

/** A field's text: a string as it is; an object's or array's strings (never its keys) joined by spaces. */
const asText = (x: unknown): string | null => {
  if (x === undefined || x === null) return null;
  if (typeof x === "string") return x;
  const all = leaves(x, []);
  return all.length ? all.join(" ") : null;
};

/** The searchable texts of one event: (field, source, step, text). */
function textsOf(e: Record<string, unknown>): [SearchField, string | null, string | null, string | null][] {
  const p = asRecord(e.payload);
  const step = typeof p.step_id === "string" ? p.step_id : null;
  if (e.phase === "act") {
    const tool = typeof p.tool === "string" ? p.tool : null;
    return [["input", tool, step, asText(p.input) ?? asText(p.input_excerpt)], [
      "output",
      tool,
      step,
      asText(p.output),
    ]];
  }
  if (e.phase === "direction" || e.phase === "governance") {
    const source = asText(p.policy_id ?? p.rule ?? p.policy);
    return [["reason", source, step, asText(p.advice ?? p.reason ?? p.message ?? p.error)]];
  }
  if (e.phase === "start") return [["task", null, null, asText(p.task)]];
  return [];
}

/**
 * The hits of one event line (its JSON text) for `query`: none when the line is not JSON or holds the text only
 * outside the searched fields.
 *
 * @example
 * ```ts
 * import { lineHits } from "./event_search.ts";
 * lineHits('{"phase":"act","payload":{"step_id":"s1","tool":"shell","output":"zebra"}}', "ZEBRA")[0].field; // "output"
 * ```
 */
export function lineHits(line: string, query: string): TextHit[] {
  let e: Record<string, unknown>;
  try {
    e = asRecord(JSON.parse(line));
  } catch {
    return [];
  }
  const needle = query.toLowerCase();
  const hits: TextHit[] = [];
  for (const [field, source, step, t] of textsOf(e)) {
    const h = t === null ? null : hitIn(t, needle);
    if (h) hits.push({ field, step_id: step, source, ...h });
  }
  return hits;
}

/**
 * The first `max` hits of `query` in `text`, the whole or a head of an `events.jsonl` (complete lines; a last line
 * cut short is not JSON and finds nothing), each with its line number.
 *
 * @example
 * ```ts
 * import { searchJsonl } from "./event_search.ts";
 * searchJsonl('{"phase":"start","payload":{"task":"Deploy"}}\n', "deploy", 5)[0].seq; // 1
 * ```
 */
export function searchJsonl(text: string, query: string, max: number): LineHit[] {
  const hits: LineHit[] = [];
  const lower = text.toLowerCase();
  const needle = jsonNeedle(query);
  let from = 0, seq = 1, counted = 0;
  while (hits.length < max) {
    const at = lower.indexOf(needle, from);
    if (at < 0) break;
    const start = lower.lastIndexOf("\n", at) + 1;
    let end = lower.indexOf("\n", at);
    if (end < 0) end = lower.length;
    for (let i = lower.indexOf("\n", counted); i >= 0 && i < start; i = lower.indexOf("\n", i + 1)) seq++;
    counted = start;
    from = end + 1;
    for (const h of lineHits(text.slice(start, end), query)) if (hits.length < max) hits.push({ seq, ...h });
  }
  return hits;
}
