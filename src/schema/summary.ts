/**
 * `summary.json` (schema version 1.3.0): outcome, verification, flags and
 * metrics of a terminal run.
 *
 * @module
 */
import * as v from "valibot";
import { CONTRACT_VERSIONS } from "../version.ts";
import { Count, Duration, JsonObject, JsonValue, looseObject, Timestamp, Unit } from "./common.ts";
import { type SchemaProblem, toProblems } from "./problems.ts";

/** `adapter_result` values. */
export const ADAPTER_RESULTS = ["success", "error", "skipped"] as const;
/** An adapter result. */
export type AdapterResult = (typeof ADAPTER_RESULTS)[number];

/** `outcome` values (the verification outcome). */
export const OUTCOMES = ["success", "goal_not_achieved", "success_unverified", "error"] as const;
/** A verification outcome. */
export type Outcome = (typeof OUTCOMES)[number];

/** The two execution modes. */
export const MODES = ["meta", "minimal"] as const;
/** An execution mode. */
export type Mode = (typeof MODES)[number];

/**
 * One assertion result in `verification.assertions` as noema writes it (the
 * contract does not show the item shape, so `summary.json` accepts any item;
 * `noema validate --profile noema` warns when an item is not this shape).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { AssertionResult } from "./summary.ts";
 * v.parse(AssertionResult, { name: "file_exists", target: "out.txt", passed: false, reason: "file_not_found: out.txt" });
 * ```
 */
export const AssertionResult = v.pipe(
  looseObject({
    name: v.pipe(v.string(), v.description("Assertion kind, e.g. file_exists, file_contains, only_modified.")),
    target: v.pipe(
      v.nullable(v.union([v.string(), v.array(v.string())])),
      v.description("Path, sorted list of paths, or null when the assertion has no target."),
    ),
    passed: v.boolean(),
    reason: v.pipe(
      v.nullable(v.string()),
      v.description("Why it failed, e.g. file_not_found: a/b.txt; null when it passed."),
    ),
  }),
  v.title("assertion result"),
);
/** One assertion result. */
export type AssertionResult = v.InferOutput<typeof AssertionResult>;

/**
 * `verification.workspace_diff` as noema writes it: sorted lists of
 * workspace-relative POSIX paths (the contract does not show the item format,
 * so `summary.json` accepts any item; `--profile noema` warns on others).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { WorkspaceDiff } from "./summary.ts";
 * v.parse(WorkspaceDiff, { added: ["new.txt"], modified: [], deleted: [] });
 * ```
 */
export const WorkspaceDiff = v.pipe(
  looseObject({
    added: v.array(v.string()),
    modified: v.array(v.string()),
    deleted: v.array(v.string()),
  }),
  v.description("Each item is a workspace-relative POSIX path; each list is sorted."),
);
/** A workspace diff. */
export type WorkspaceDiff = v.InferOutput<typeof WorkspaceDiff>;

/**
 * `verification.workspace_diff` as the contract has it: three lists named
 * `added`, `modified`, `deleted`, whose item format it does not show.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ContractWorkspaceDiff } from "./summary.ts";
 * v.parse(ContractWorkspaceDiff, { added: [{ path: "new.txt", bytes: 3 }], modified: [], deleted: [] });
 * ```
 */
export const ContractWorkspaceDiff = v.pipe(
  looseObject({
    added: v.array(JsonValue),
    modified: v.array(JsonValue),
    deleted: v.array(JsonValue),
  }),
  v.description("The item format is not shown by the contract: any item; noema writes workspace-relative POSIX paths."),
);

const verificationEntries = {
  provided: v.pipe(v.boolean(), v.description("Whether verification assertions were provided.")),
  passed: v.pipe(v.nullable(v.boolean()), v.description("null when unverified or unavailable.")),
  assertions: v.array(AssertionResult),
  workspace_diff: v.nullable(WorkspaceDiff),
  snapshots: v.pipe(
    v.nullable(looseObject({ pre: v.string(), post: v.string() })),
    v.description("Snapshot paths relative to the episode directory."),
  ),
  policy: v.optional(looseObject({
    ignore: v.pipe(v.array(v.string()), v.description("Path segment names to skip.")),
    symlinks: v.pipe(v.string(), v.description('How symlinks are treated; "skip" never follows them.')),
  })),
  error: v.optional(v.pipe(
    v.nullable(v.string()),
    v.description("Verification error reason, e.g. workspace_unavailable; passed is then null."),
  )),
};

/**
 * `summary.json` `verification` as noema writes it (assertion results and
 * workspace diff in noema's shapes).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { Verification } from "./summary.ts";
 * v.parse(Verification, { provided: false, passed: null, assertions: [], workspace_diff: null, snapshots: null,
 *   policy: { ignore: [".git"], symlinks: "skip" }, error: null });
 * ```
 */
export const Verification = looseObject(verificationEntries);
/** `summary.json` `verification`, as noema writes it. */
export type Verification = v.InferOutput<typeof Verification>;

/**
 * `summary.json` `verification` as the contract has it: any item in
 * `assertions` and in the `workspace_diff` lists (their shapes are not shown).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ContractVerification } from "./summary.ts";
 * v.parse(ContractVerification, { provided: true, passed: true, assertions: [{ check: "x", ok: true }],
 *   workspace_diff: null, snapshots: null });
 * ```
 */
export const ContractVerification = looseObject({
  ...verificationEntries,
  assertions: v.pipe(
    v.array(JsonValue),
    v.description(
      "Assertion results; the item shape is not shown by the contract (noema: {name, target, passed, reason}).",
    ),
  ),
  workspace_diff: v.nullable(ContractWorkspaceDiff),
});
/** `summary.json` `verification`, as the contract has it. */
export type ContractVerification = v.InferOutput<typeof ContractVerification>;

const FourDecimals = v.check<number, string>(
  (n) => Math.abs(Math.round(n * 1e4) / 1e4 - n) < 1e-12,
  "must be rounded to 4 decimal places",
);

const Rate = v.pipe(v.number(), v.minValue(0, "must be >= 0"));

/**
 * One model's prices in US dollars per million tokens (`noema.jsonc`
 * `prices`, and as used in `metrics.cost`).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ModelPrice } from "./summary.ts";
 * v.parse(ModelPrice, { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 });
 * ```
 */
export const ModelPrice = v.strictObject({
  input: v.pipe(Rate, v.description("Uncached input tokens, USD per million.")),
  output: v.pipe(Rate, v.description("Output tokens, USD per million.")),
  cacheWrite: v.optional(v.pipe(Rate, v.description("Cache-write tokens, USD per million (default: input)."))),
  cacheRead: v.optional(v.pipe(Rate, v.description("Cache-read tokens, USD per million (default: input)."))),
});
/** One model's prices. */
export type ModelPrice = v.InferOutput<typeof ModelPrice>;

/**
 * One model's tokens, summed over its calls (`metrics.tokens.models`).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ModelUsage } from "./summary.ts";
 * v.parse(ModelUsage, { input: 30, output: 10, cache_write: 0, cache_read: 20, model_calls: 2 });
 * ```
 */
export const ModelUsage = looseObject({
  input: v.pipe(Count, v.description("Input tokens, cached ones included.")),
  output: Count,
  cache_write: v.pipe(Count, v.description("Of input: written to the prompt cache.")),
  cache_read: v.pipe(Count, v.description("Of input: read from the prompt cache.")),
  model_calls: Count,
});
/** One model's tokens. */
export type ModelUsage = v.InferOutput<typeof ModelUsage>;

/**
 * `metrics.tokens`: the model tokens an agent used (an extension field: the
 * llm agent's model calls, a Claude Code session's transcript; absent for
 * other agents).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { TokenMetrics } from "./summary.ts";
 * v.parse(TokenMetrics, { input: 120, output: 30, total: 150, model_calls: 3 });
 * ```
 */
export const TokenMetrics = v.pipe(
  looseObject({
    input: v.pipe(Count, v.description("Input (prompt) tokens, all model calls, cached ones included.")),
    output: v.pipe(Count, v.description("Output (completion) tokens, all model calls.")),
    total: v.pipe(Count, v.description("input + output.")),
    model_calls: v.optional(v.pipe(Count, v.description("Model calls made (replayed calls included)."))),
    cache_write: v.optional(v.pipe(Count, v.description("Of input: tokens written to the prompt cache."))),
    cache_read: v.optional(v.pipe(Count, v.description("Of input: tokens read from the prompt cache."))),
    models: v.optional(v.pipe(
      JsonObject,
      v.check(
        (m) => Object.values(m).every((x) => v.is(ModelUsage, x)),
        "each model's entry must be {input, output, cache_write, cache_read, model_calls}",
      ),
      v.description(
        "The same counts per model id (what the cost estimate prices): " +
          "{input, output, cache_write, cache_read, model_calls} each.",
      ),
    )),
  }),
  v.description("Model token usage of an agent run (the llm agent's model calls, Claude Code's transcript)."),
);
/** `metrics.tokens`. */
export type TokenMetrics = v.InferOutput<typeof TokenMetrics>;

/**
 * One model's entry in `metrics.cost.models`: its cost, the prices used and
 * where they came from (null when it has no price).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ModelCost } from "./summary.ts";
 * v.parse(ModelCost, { usd: 0.5, prices: { input: 1, output: 2 }, source: "noema.jsonc" });
 * ```
 */
export const ModelCost = looseObject({
  usd: v.nullable(v.pipe(v.number(), v.minValue(0))),
  prices: v.nullable(looseObject(ModelPrice.entries)),
  source: v.nullable(v.picklist(["default", "noema.jsonc"])),
});
/** One model's entry in `metrics.cost.models`. */
export type ModelCost = v.InferOutput<typeof ModelCost>;

/**
 * `metrics.cost`: an estimate of what the model turns cost, from a price
 * table (built-in, overridable in `noema.jsonc` `prices`); an extension field.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { CostMetrics } from "./summary.ts";
 * v.parse(CostMetrics, { usd: null, reason: "no price for \"m\"", models: { m: { usd: null, prices: null, source: null } } });
 * ```
 */
export const CostMetrics = v.pipe(
  looseObject({
    usd: v.pipe(
      v.nullable(v.pipe(v.number(), v.minValue(0))),
      v.description("Estimated cost in US dollars; null when a model used has no price."),
    ),
    reason: v.pipe(v.nullable(v.string()), v.description("Why usd is null, else null.")),
    models: v.pipe(
      JsonObject,
      v.check(
        (m) => Object.values(m).every((x) => v.is(ModelCost, x)),
        "each model's entry must be {usd, prices, source}",
      ),
      v.description(
        "Per model id: {usd, prices (USD per million tokens, as used, or null), source (default, noema.jsonc or null)}.",
      ),
    ),
  }),
  v.description("Estimated model cost of the run."),
);
/** `metrics.cost`. */
export type CostMetrics = v.InferOutput<typeof CostMetrics>;

/**
 * `metrics.review`: how the policies' `review` treated the results of the run's actions (an extension field;
 * absent when no policy reviews results).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ReviewMetrics } from "./summary.ts";
 * v.parse(ReviewMetrics, { reviewed: 3, redacted: 1, blocked: 1, hinted: 0, failed: 0, would: 0 });
 * ```
 */
export const ReviewMetrics = v.pipe(
  looseObject({
    reviewed: v.pipe(Count, v.description("Results reviewed.")),
    redacted: v.pipe(Count, v.description("Results the agent got redacted.")),
    blocked: v.pipe(Count, v.description("Results withheld from the agent.")),
    hinted: v.pipe(Count, v.description("Results passed on with hints.")),
    failed: v.pipe(Count, v.description("Reviews in which a policy failed.")),
    would: v.pipe(Count, v.description("Redactions and blocks recorded but not applied (governance audit).")),
  }),
  v.description("Reviews of action results by policies' review method."),
);

/**
 * `summary.json`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { Summary } from "./summary.ts";
 * console.log(Object.keys(Summary.entries));
 * ```
 */
export const Summary = looseObject({
  schema_version: v.literal(CONTRACT_VERSIONS.summary),
  episode_id: v.string(),
  task: v.pipe(v.string(), v.description("Original task or goal.")),
  started_at: Timestamp,
  duration_sec: v.pipe(Duration, v.description("Total episode duration in seconds.")),
  adapter_result: v.picklist(ADAPTER_RESULTS),
  outcome: v.pipe(v.picklist(OUTCOMES), v.description("Verification outcome.")),
  verification: ContractVerification,
  flags: v.optional(looseObject({
    intuition: v.pipe(v.boolean(), v.description("Whether intuition was enabled.")),
    mode: v.picklist(MODES),
    direction: v.optional(v.pipe(
      looseObject({
        applied: v.optional(v.pipe(Count, v.description("Directives applied."))),
        vetoed: v.optional(v.pipe(Count, v.description("Vetoes issued."))),
        policy: v.optional(v.pipe(v.string(), v.description("Policy that issued directives."))),
        threshold: v.optional(v.pipe(v.number(), v.description("Confidence threshold used."))),
        last_diff: v.optional(v.pipe(v.array(v.unknown()), v.description("Paths modified by the last directive."))),
      }),
      v.description("Meta mode only."),
    )),
  })),
  metrics: v.optional(looseObject({
    success: v.pipe(v.picklist([0, 1]), v.description("1 success, 0 failure.")),
    plan_count: Count,
    act_count: Count,
    reflect_count: Count,
    veto_count: Count,
    learn_proposals: v.optional(Count),
    learn_applied: v.optional(Count),
    latencies: v.optional(looseObject({
      first_action_ms: v.optional(Duration),
      total_ms: v.optional(Duration),
      planning_ms: v.optional(Duration),
      execution_ms: v.optional(Duration),
    })),
    tokens: v.optional(TokenMetrics),
    cost: v.optional(CostMetrics),
    review: v.optional(ReviewMetrics),
  })),
  insight: v.optional(v.pipe(
    looseObject({
      metrics: v.optional(looseObject({
        plan_adherence: v.optional(v.pipe(Unit, FourDecimals)),
        tool_coverage: v.optional(Unit),
        branching_factor: v.optional(v.pipe(Count, v.description("Count of direction events."))),
        plan_revisions: v.optional(Count),
      })),
    }),
    v.description("Meta mode only."),
  )),
  tags: v.optional(JsonObject),
});
/** `summary.json`. */
export type Summary = v.InferOutput<typeof Summary>;

/**
 * Checks a parsed `summary.json` against the schema and the verification
 * rules: with no assertions provided, `passed` is null, `assertions` empty and
 * `workspace_diff` and `snapshots` null; a verification error leaves `passed`
 * null.
 *
 * @example
 * ```ts
 * import { checkSummary } from "./summary.ts";
 * checkSummary({}).length > 0; // true
 * ```
 */
export function checkSummary(value: unknown): SchemaProblem[] {
  const r = v.safeParse(Summary, value);
  if (!r.success) return toProblems(r.issues);
  const ver = r.output.verification;
  const problems: SchemaProblem[] = [];
  if (!ver.provided) {
    if (ver.passed !== null) {
      problems.push({ path: "verification.passed", message: "must be null when provided is false" });
    }
    if (ver.assertions.length > 0) {
      problems.push({ path: "verification.assertions", message: "must be empty when provided is false" });
    }
    if (ver.workspace_diff !== null) {
      problems.push({ path: "verification.workspace_diff", message: "must be null when provided is false" });
    }
    if (ver.snapshots !== null) {
      problems.push({ path: "verification.snapshots", message: "must be null when provided is false" });
    }
  }
  if (ver.error != null && ver.passed !== null) {
    problems.push({ path: "verification.passed", message: "must be null when verification.error is set" });
  }
  return problems;
}
