/**
 * The shape of a rule set: the `rules` key of `noema.jsonc` (or of a task
 * file), and the whole of a rules file (`rules_file`, `--rules`, the user's
 * `~/.config/noema/rules.jsonc`). A rule whose syntax is wrong fails here, so
 * the error names the file, the line and the field at load time.
 *
 * @module
 */
import * as v from "valibot";
import { didYouMean } from "../jsonc.ts";
import { ruleProblem } from "./rule.ts";

/** What a rule does to a call it matches; also the `default` of a rule set. */
export const RULE_EFFECTS = ["deny", "ask", "allow"] as const;
/** A rule effect. */
export type RuleEffect = (typeof RULE_EFFECTS)[number];

/** Whether a rule set is enforced or only watched (its verdicts recorded as would-have-vetoed). */
export const RULE_MODES = ["enforce", "audit"] as const;
/** A rule set's mode. */
export type RuleMode = (typeof RULE_MODES)[number];

/** A rule's text, checked: a rule noema cannot read is refused with the reason. */
export const RuleText = v.pipe(
  v.string(),
  v.check((s) => ruleProblem(s) === null, (issue) => ruleProblem(String(issue.input)) ?? "invalid rule"),
);

/**
 * One rule: its text in Claude Code's permission-rule syntax, or the text with a reason.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { RuleEntry } from "./schema.ts";
 * v.parse(RuleEntry, { rule: "Bash(git push:*)", reason: "pushes go through review" });
 * ```
 */
export const RuleEntry = v.union([
  RuleText,
  v.strictObject({
    rule: RuleText,
    reason: v.optional(v.pipe(v.string(), v.description("Why: it goes into the verdict the agent reads."))),
  }),
], 'must be a rule string ("Bash(git push:*)") or { "rule": "…", "reason": "…" }');
/** One rule. */
export type RuleEntry = v.InferOutput<typeof RuleEntry>;

/** The message of an unknown key in a rule set, with a suggestion. */
function unknownKey(issue: v.BaseIssue<unknown>): string {
  const key = String((issue.path?.at(-1) as { key?: unknown } | undefined)?.key ?? issue.input);
  const hint = didYouMean(key, Object.keys(RULE_SET_ENTRIES));
  // Worded "must…" so the settings reader keeps it (it rewrites other schema messages as "expected …").
  return `must be a known key (${Object.keys(RULE_SET_ENTRIES).join(", ")})${hint ? `: did you mean "${hint}"?` : ""}`;
}

const Rules = (what: string) => v.optional(v.pipe(v.array(RuleEntry), v.description(what)));

/** The entries of a rule set (without `$schema`). */
export const RULE_SET_ENTRIES = {
  deny: Rules("Calls these rules match are vetoed (deny beats ask and allow)."),
  ask: Rules("Calls these rules match are held for approval (ask beats allow)."),
  allow: Rules("Calls these rules match are let through (unless a deny or ask rule matches)."),
  default: v.optional(
    v.pipe(v.picklist(RULE_EFFECTS), v.description("What a call no rule matches gets. Default: allow.")),
  ),
  mode: v.optional(
    v.pipe(
      v.picklist(RULE_MODES),
      v.description('"audit" records what the rules would veto without enforcing it. Default: enforce.'),
    ),
  ),
};

/**
 * A rule set, as the `rules` key holds it.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { RuleSet } from "./schema.ts";
 * v.parse(RuleSet, { deny: ["Bash(git push:*)"], default: "allow" });
 * ```
 */
export const RuleSet = v.strictObject({
  ...RULE_SET_ENTRIES,
  import: v.optional(
    v.pipe(
      v.string(),
      v.description(
        "A Claude Code settings file (.claude/settings.json, relative to this file) whose permissions.deny, ask " +
          "and allow are imported as a rule set of their own: the strictest of the two sets' answers wins.",
      ),
    ),
  ),
}, unknownKey);
/** A rule set. */
export type RuleSet = v.InferOutput<typeof RuleSet>;

/**
 * A rules file: a rule set, with an optional `$schema`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { RulesFile } from "./schema.ts";
 * v.parse(RulesFile, { deny: [{ rule: "Read(./.env)", reason: "secrets" }] });
 * ```
 */
export const RulesFile = v.strictObject({ $schema: v.optional(v.string()), ...RULE_SET_ENTRIES }, unknownKey);
/** A rules file. */
export type RulesFile = v.InferOutput<typeof RulesFile>;

/**
 * A rule set as loaded: where it came from (for located reasons and for `/path` rules) and its rules, each with its
 * field. It is recorded in the episode's `start` event, so a resumed episode is governed by the same rules.
 */
export interface RuleLayer {
  /** The file it came from. */
  source: string;
  /** Its field in that file (`rules` in noema.jsonc; empty for a rules file). */
  field: string;
  /** The directory `/path` rules are relative to (the file's). */
  base: string;
  mode: RuleMode;
  default: RuleEffect;
  rules: { effect: RuleEffect; rule: string; reason: string | null; field: string }[];
}

/**
 * A loaded layer from a validated rule set.
 *
 * @example
 * ```ts
 * import { toLayer } from "./schema.ts";
 * toLayer({ deny: ["Bash(git push:*)"] }, { source: "/p/noema.jsonc", field: "rules", base: "/p" }).rules[0].field;
 * // "rules.deny[0]"
 * ```
 */
export function toLayer(set: Omit<RuleSet, "import">, at: { source: string; field: string; base: string }): RuleLayer {
  const rules: RuleLayer["rules"] = [];
  for (const effect of RULE_EFFECTS) {
    for (const [i, e] of (set[effect] ?? []).entries()) {
      const field = `${at.field ? `${at.field}.` : ""}${effect}[${i}]`;
      rules.push(
        typeof e === "string"
          ? { effect, rule: e, reason: null, field }
          : { effect, rule: e.rule, reason: e.reason ?? null, field },
      );
    }
  }
  return { ...at, mode: set.mode ?? "enforce", default: set.default ?? "allow", rules };
}
