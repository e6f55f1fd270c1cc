/**
 * The words the artifacts are made of: every key and every fixed value
 * (picklist and literal) of the artifact schemas, read from the schemas
 * themselves. A secret whose value occurs inside one of them cannot be masked
 * without rewriting structure (`"kind": "[REDACTED:X]"`, a key renamed), so
 * such a value is not treated as a secret (see `Redactor`).
 *
 * @module
 */
import type * as v from "valibot";
import { SCHEMAS } from "./registry.ts";
import { KNOWN_PHASES, PHASE_PAYLOADS } from "./event.ts";

/** A valibot schema or action, as far as the walk reads it. */
type Node = {
  type?: string;
  kind?: string;
  entries?: Record<string, unknown>;
  options?: unknown[];
  literal?: unknown;
  item?: unknown;
  items?: unknown[];
  wrapped?: unknown;
  key?: unknown;
  value?: unknown;
  rest?: unknown;
  pipe?: unknown[];
};

/**
 * Words noema writes where the schemas take any string: the phases and
 * runtime event types the validator counts, verdict kinds, its agent id and
 * the artifacts' file names (the `links`).
 */
const WRITTEN_WORDS = [
  ...KNOWN_PHASES,
  "run.state_projection",
  "run.interrupt",
  "run.checkpoint",
  "run.resume",
  "hint",
  "intervention",
  "veto",
  "none",
  "noema",
  "events.jsonl",
  "state.json",
  "summary.json",
  "manifest.json",
  "learn.jsonl",
];

let words: ReadonlySet<string> | undefined;

/** Adds the words of one schema and of every schema inside it. */
function collect(node: unknown, out: Set<string>, seen: Set<unknown>): void {
  if (typeof node !== "object" || node === null || seen.has(node)) return;
  seen.add(node);
  const n = node as Node;
  if (n.kind !== undefined && n.kind !== "schema") return; // a validation or transformation: no words
  for (const key of Object.keys(n.entries ?? {})) {
    out.add(key);
    collect(n.entries![key], out, seen);
  }
  if (typeof n.literal === "string") out.add(n.literal);
  for (const o of n.options ?? []) {
    if (typeof o === "string") out.add(o);
    else collect(o, out, seen);
  }
  for (const part of [n.item, n.wrapped, n.key, n.value, n.rest, ...(n.items ?? []), ...(n.pipe ?? [])]) {
    collect(part, out, seen);
  }
}

/**
 * Every key and fixed string value of the artifact schemas (events and their
 * phase payloads, state, summary, manifest, learn records), and the words
 * noema writes where they take any string (phases, event types, file names).
 *
 * @example
 * ```ts
 * import { contractWords } from "./vocabulary.ts";
 * contractWords().has("verify"); // true: a step kind
 * contractWords().has("success_unverified"); // true: an outcome
 * ```
 */
export function contractWords(): ReadonlySet<string> {
  if (words !== undefined) return words;
  const out = new Set<string>(WRITTEN_WORDS), seen = new Set<unknown>();
  for (const entry of Object.values(SCHEMAS)) collect(entry.schema as v.GenericSchema, out, seen);
  for (const schema of Object.values(PHASE_PAYLOADS)) collect(schema, out, seen);
  return words = out;
}

/**
 * The first word of the artifacts that holds `value` (a secret's value), or
 * null when none does.
 *
 * @example
 * ```ts
 * import { structuralWordHolding } from "./vocabulary.ts";
 * structuralWordHolding("verify"); // "verify"
 * structuralWordHolding("succes"); // "success" (or another word holding it)
 * structuralWordHolding("hunter2hunter2"); // null
 * ```
 */
export function structuralWordHolding(value: string): string | null {
  for (const word of contractWords()) if (word.includes(value)) return word;
  return null;
}
