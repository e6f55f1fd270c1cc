/**
 * Run settings: the one schema behind `noema run` flags, JSONC task files,
 * the project config `noema.jsonc`, and the library's `run()` options.
 *
 * @module
 */
import * as v from "valibot";
import { MODES } from "../schema/summary.ts";
import { INTUITION_MODES } from "../schema/state.ts";
import { STEP_KINDS } from "../schema/plan.ts";
import { PriceTable } from "./cost/prices.ts";
import { RuleSet } from "./rules/schema.ts";
import { MAX_TIMER_MS } from "../store/limits.ts";

/** Governance modes. */
export const GOVERNANCE_MODES = ["off", "audit", "enforce"] as const;
/** A governance mode. */
export type GovernanceMode = (typeof GOVERNANCE_MODES)[number];

/** Failure policies for policies that throw, time out or return garbage. */
export const FAILURE_POLICIES = ["fail_open", "fail_closed"] as const;
/** A failure policy. */
export type FailurePolicy = (typeof FAILURE_POLICIES)[number];

/** Learning modes. */
export const LEARN_MODES = ["off", "record", "apply"] as const;
/** A learning mode. */
export type LearnMode = (typeof LEARN_MODES)[number];

/**
 * A planned step in a task file: a `"<kind>:<description>"` label or an
 * object.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { StepSpec } from "noema";
 * v.parse(StepSpec, { kind: "act", description: "List files", inputs: { command: "ls" } });
 * v.parse(StepSpec, "verify:Check the result");
 * ```
 */
const StepLabel = v.pipe(
  v.string(),
  v.regex(
    new RegExp(`^(?:${STEP_KINDS.join("|")}):.+`, "s"),
    `must have the form "<kind>:<description>" with a kind among ${STEP_KINDS.join(", ")}`,
  ),
);
/** A step written as an object (one of the two forms of {@link StepSpec}). */
export const StepObject = v.strictObject({
  id: v.optional(
    v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "must be letters, digits, '.', '_' or '-'")),
  ),
  kind: v.picklist(STEP_KINDS),
  description: v.string(),
  rationale: v.optional(v.string()),
  inputs: v.optional(v.record(v.string(), v.unknown())),
});
// Chosen by the input's type (not a union), so a bad object step reports its own field ("steps[1].kind: …").
export const StepSpec: v.GenericSchema<unknown, v.InferOutput<typeof StepLabel> | v.InferOutput<typeof StepObject>> = v
  .lazy((
    input,
  ) => (typeof input === "string" ? StepLabel : StepObject));
/** A planned step in a task file. */
export type StepSpec = v.InferOutput<typeof StepSpec>;

/** The longest policy timeout ({@link MAX_TIMER_MS}). */
export const MAX_POLICY_TIMEOUT_MS = MAX_TIMER_MS;

/**
 * Names a tag may not have: JavaScript readers drop or mistake them (`{"__proto__": …}` sets an object's
 * prototype), so such a tag would vanish without a word instead of being recorded.
 */
export const RESERVED_TAG_NAMES: readonly string[] = ["__proto__", "constructor", "prototype"];

/** The problem with a tag name, or null for a good one. */
export function tagNameProblem(name: string): string | null {
  return RESERVED_TAG_NAMES.includes(name)
    ? `${JSON.stringify(name)} cannot be a tag name (${RESERVED_TAG_NAMES.join(", ")} are refused: readers drop them)`
    : null;
}

// A list is an object to `v.record` (["a"] would become {"0": "a"}): refuse it first. So is a reserved name, which
// `v.record` would drop unchecked.
const Tags = v.pipe(
  v.custom<unknown>((x) => !Array.isArray(x), 'must be an object of tags ({"key": "value"}), not a list'),
  v.check(
    (x) => typeof x !== "object" || x === null || !RESERVED_TAG_NAMES.some((n) => Object.hasOwn(x, n)),
    (issue) => {
      const x = issue.input as object;
      return tagNameProblem(RESERVED_TAG_NAMES.find((n) => Object.hasOwn(x, n))!)!;
    },
  ),
  v.record(v.string(), v.union([v.string(), v.number(), v.boolean()])),
);

/**
 * Settings shared by `noema.jsonc`, task files and flags. Paths are relative
 * to the file that names them.
 */
export const SharedSettings = {
  using: v.optional(
    v.pipe(v.string(), v.description("Adapter: a built-in name (minimal, shell, command, scripted) or a .ts file.")),
  ),
  adapter: v.optional(v.pipe(
    v.record(v.string(), v.unknown()),
    v.description("Adapter configuration; `name` may name the adapter like `using`."),
  )),
  policies: v.optional(v.pipe(v.array(v.string()), v.description("Policy plugin files (.ts)."))),
  planner: v.optional(v.pipe(v.string(), v.description("Planner plugin file (.ts); ignored when steps are given."))),
  tags: v.optional(Tags),
  seed: v.optional(v.pipe(v.number(), v.integer())),
  mode: v.optional(v.picklist(MODES)),
  intuition_mode: v.optional(v.picklist(INTUITION_MODES)),
  governance: v.optional(v.picklist(GOVERNANCE_MODES)),
  failure_policy: v.optional(v.picklist(FAILURE_POLICIES)),
  direction_min_confidence: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1))),
  policy_timeout_ms: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1),
      v.maxValue(
        MAX_POLICY_TIMEOUT_MS,
        `must be at most ${MAX_POLICY_TIMEOUT_MS} ms (about 24.8 days): timers cannot wait longer`,
      ),
    ),
  ),
  learn_mode: v.optional(v.picklist(LEARN_MODES)),
  learn_min_successes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  learn_min_confidence: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1))),
  workspace: v.optional(v.string()),
  secrets: v.optional(
    v.pipe(
      v.array(v.string()),
      v.description(
        'Environment variable names whose values are masked in artifacts. Variables whose names say secret (*TOKEN*, *SECRET*, *PASSWORD*, *_KEY…) are masked without being named; "!NAME" opts NAME out of that.',
      ),
    ),
  ),
  verify: v.optional(v.pipe(v.array(v.unknown()), v.description("Verification assertions."))),
  rules: v.optional(
    v.pipe(
      RuleSet,
      v.description(
        'Permission rules in Claude Code\'s syntax: { "deny": ["Bash(git push:*)"], "ask": [], "allow": [], ' +
          '"default": "allow", "mode": "enforce" } (docs/rules.md). They only add to the user\'s rules, never loosen them.',
      ),
    ),
  ),
  rules_file: v.optional(
    v.pipe(v.string(), v.description("A JSONC rules file (the shape of `rules`), relative to this file.")),
  ),
};

/**
 * A JSONC task file: the task and, optionally, its plan and any setting.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { TaskFile } from "noema";
 * v.parse(TaskFile, { task: "List the repo", using: "shell", steps: [{ kind: "act", description: "ls", inputs: { command: "ls" } }] });
 * ```
 */
export const TaskFile = v.strictObject({
  $schema: v.optional(v.string()),
  task: v.pipe(v.string(), v.minLength(1, "must not be empty")),
  steps: v.optional(v.array(StepSpec)),
  episode_id: v.optional(v.string()),
  ...SharedSettings,
});
/** A task file. */
export type TaskFile = v.InferOutput<typeof TaskFile>;

/**
 * The project config `noema.jsonc`: defaults for every run started in its
 * directory. Flags and task files win over it.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ProjectConfig } from "noema";
 * v.parse(ProjectConfig, { governance: "enforce", policies: ["plugins/policies/sql-guard.ts"] });
 * ```
 */
export const ProjectConfig = v.strictObject({
  $schema: v.optional(v.string()),
  root: v.optional(v.pipe(v.string(), v.description("Root directory for episodes (like --root)."))),
  store: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^(postgres(ql)?:\/\/|file:\/\/\/)/, "must be a postgres:// or file:/// URL"),
      v.description(
        "The shared store, postgres://user@host:port/db or file:///shared/dir (like --store; NOEMA_STORE wins). " +
          "Keep a password out of the file: ~/.pgpass or PGPASSWORD.",
      ),
    ),
  ),
  project: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, "must be 1-63 characters of a-z, 0-9, '.', '_' and '-'"),
      v.description(
        "The project this directory's runs are published under in the shared store, and the one list, approvals, " +
          "serve and pull see (like --project; NOEMA_PROJECT wins).",
      ),
    ),
  ),
  policies_dir: v.optional(
    v.pipe(
      v.string(),
      v.description(
        "A folder (relative to noema.jsonc) whose *.ts files are loaded as policies. A policies/ folder is never " +
          "loaded without it.",
      ),
    ),
  ),
  prices: v.optional(
    v.pipe(
      PriceTable,
      v.description(
        'Model prices in USD per million tokens, over noema\'s built-in table: { "<model>": { "input": 3, ' +
          '"output": 15, "cacheWrite": 3.75, "cacheRead": 0.3 } }. Used for summary.json metrics.cost.',
      ),
    ),
  ),
  ...SharedSettings,
});
/** The project config. */
export type ProjectConfig = v.InferOutput<typeof ProjectConfig>;
