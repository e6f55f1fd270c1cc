/**
 * Review verdicts: what a policy's optional `review(state)` returns about an
 * action's result, after the action ran and before its result reaches the
 * agent. The shapes are valibot schemas (the types are inferred from them),
 * and {@link reviewVerdictProblem} names the field a bad verdict gets wrong.
 *
 * | verdict | what the agent gets |
 * |---|---|
 * | `{ kind: "redact", text }` | `text` in place of the result |
 * | `{ kind: "redact", patterns }` | the result with every match of the patterns (regular expression sources) masked |
 * | `{ kind: "block", advice }` | an error carrying `advice` instead of the result |
 * | `{ kind: "hint", advice }` | the result, with `advice` as context |
 * | nothing | the result |
 *
 * @module
 */
import * as v from "valibot";
import { jsonType } from "../json.ts";
import { clipText } from "../text_head.ts";

const Confidence = v.pipe(
  v.number("must be a number"),
  v.minValue(0, "must be from 0 to 1"),
  v.maxValue(1, "must be from 0 to 1"),
);
const Advice = v.string("must be a string");
const Common = {
  advice: Advice,
  confidence: v.optional(Confidence),
  rationale: v.optional(v.string("must be a string")),
  risk_tags: v.optional(v.array(v.string("must be a string"), "must be a list of strings")),
};

/** A regular expression source that compiles (used with the `g` flag). */
const Pattern = v.pipe(
  v.string("must be a string (a regular expression source)"),
  v.minLength(1, "must not be empty"),
  v.check((s) => {
    try {
      new RegExp(s, "g");
      return true;
    } catch {
      return false;
    }
  }, "is not a valid regular expression"),
);

/**
 * A `redact` verdict: `text` replaces the result, or `patterns` mask parts of it (one of the two at least).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { RedactVerdict } from "./review.ts";
 * v.parse(RedactVerdict, { kind: "redact", patterns: ["sk-[A-Za-z0-9]{20,}"], advice: "key masked" });
 * ```
 */
export const RedactVerdict = v.pipe(
  v.object({
    kind: v.literal("redact"),
    ...Common,
    text: v.optional(v.string("must be a string")),
    patterns: v.optional(v.array(Pattern, "must be a list of regular expression sources")),
  }),
  v.check((r) => r.text !== undefined || (r.patterns?.length ?? 0) > 0, "a redact verdict needs text or patterns"),
);

/** A `block` verdict: the agent gets an error carrying `advice` instead of the result. */
export const BlockVerdict = v.object({ kind: v.literal("block"), ...Common });

/** A `hint` verdict: the agent gets the result with `advice` as context. */
export const ReviewHint = v.object({ kind: v.literal("hint"), ...Common });

/**
 * What `review` may return (besides nothing).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ReviewVerdict } from "./review.ts";
 * v.parse(ReviewVerdict, { kind: "block", advice: "the page carries instructions for the agent" });
 * ```
 */
export const ReviewVerdict = v.variant("kind", [RedactVerdict, BlockVerdict, ReviewHint]);
/** What `review` may return (besides nothing). */
export type ReviewVerdict = v.InferOutput<typeof ReviewVerdict>;
/** The kinds of review verdict. */
export type ReviewKind = ReviewVerdict["kind"];

/** The default confidence of each review verdict kind. */
export const REVIEW_CONFIDENCE: Readonly<Record<ReviewKind, number>> = { redact: 0.8, block: 0.8, hint: 0.5 };

/**
 * The result of the action, as `review` sees it in `state.result`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ReviewedResult } from "./review.ts";
 * v.parse(ReviewedResult, { status: "ok", output: { stdout: "hi" }, excerpt: '{"stdout":"hi"}', error: null });
 * ```
 */
export const ReviewedResult = v.object({
  status: v.picklist(["ok", "error", "skipped"]),
  /** What the tool produced (its real output: secrets are masked only in artifacts). */
  output: v.unknown(),
  /** The output as one text, cut at 2,000 characters: what most checks want to read. */
  excerpt: v.string(),
  /** The error, for a failed action. */
  error: v.nullable(v.object({ type: v.string(), message: v.string() })),
});
/** `state.result` in `review`. */
export type ReviewedResult = v.InferOutput<typeof ReviewedResult>;

/**
 * Checks what `review` returned: nothing, or a well-formed review verdict.
 * Returns the problem naming the field (`patterns[1]: is not a valid regular
 * expression`), or null when it is acceptable.
 *
 * @example
 * ```ts
 * import { reviewVerdictProblem } from "./review.ts";
 * reviewVerdictProblem({ kind: "redact", advice: "x" }); // "a redact verdict needs text or patterns"
 * reviewVerdictProblem({ kind: "veto", advice: "x" }); // 'kind: must be "redact", "block" or "hint", got "veto"'
 * ```
 */
export function reviewVerdictProblem(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) {
    return `expected a review verdict object or nothing, got ${jsonType(value)}`;
  }
  const kind = (value as { kind?: unknown }).kind;
  if (kind !== "redact" && kind !== "block" && kind !== "hint") {
    return `kind: must be "redact", "block" or "hint", got ${JSON.stringify(kind ?? null)}`;
  }
  const r = v.safeParse(ReviewVerdict, value);
  if (r.success) return null;
  const issue = r.issues[0];
  const path = v.getDotPath(issue);
  const message = issue.input === undefined && /^Invalid key/.test(issue.message) ? "is missing" : issue.message;
  // getDotPath writes list indexes as `.1`: shown as `[1]`.
  return path ? `${path.replace(/\.(\d+)/g, "[$1]")}: ${message}` : message;
}

/** A one-text excerpt of an output (at most `max` characters). */
export function outputExcerpt(output: unknown, max = 2000): string {
  let text: string;
  try {
    text = typeof output === "string" ? output : JSON.stringify(output) ?? "";
  } catch {
    text = String(output);
  }
  return clipText(text, max);
}
