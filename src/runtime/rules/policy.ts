/**
 * The built-in `Rules` policy: the rule sets of a run (the user's, then the
 * project's, a task file's, `--rules` files) as one policy, consulted before
 * the `.ts` policies.
 *
 * Layers only tighten: each enforced layer decides on its own (deny beats ask
 * beats allow, then its default) and the strictest answer wins, so a later
 * layer's `allow` or `default` never loosens an earlier layer's deny or ask.
 * A deny is a veto; an ask is a veto that asks for approval (the run pauses,
 * Claude Code asks its user, Codex and a headless Gemini deny saying so). A
 * layer in `audit` mode never blocks: when it is stricter than the enforced
 * layers, its verdict is recorded as a would-have-vetoed (`audit: true`).
 *
 * @module
 */
import type { PolicyState, Verdict } from "../../plugins/api.ts";
import type { LoadedPolicy } from "../../plugins/loader.ts";
import { canonicalHash } from "../../store/hash.ts";
import { decideLayer, type LayerDecision } from "./match.ts";
import type { RuleEffect, RuleLayer } from "./schema.ts";
import { ruleTarget } from "./tools.ts";
import { shellQuote } from "../core/command.ts";

/** The name and version of the built-in rules policy (its id is `Rules@1.0`). */
export const RULES_POLICY = { name: "Rules", version: "1.0" } as const;
/** The id of the built-in rules policy. */
export const RULES_POLICY_ID = `${RULES_POLICY.name}@${RULES_POLICY.version}`;

const STRICTNESS: Record<RuleEffect, number> = { allow: 0, ask: 1, deny: 2 };

interface Decided extends LayerDecision {
  layer: RuleLayer;
}

function strictest(list: readonly Decided[]): Decided | null {
  let best: Decided | null = null;
  for (const d of list) if (best === null || STRICTNESS[d.effect] > STRICTNESS[best.effect]) best = d;
  return best;
}

/** Where a rule (or a default) is written: `noema.jsonc rules.deny[0]`. */
function whereOf(d: Decided): string {
  const field = d.rule?.field ?? `${d.layer.field ? `${d.layer.field}.` : ""}default`;
  return `${d.layer.source} ${field}`;
}

function advice(d: Decided, audit: boolean): string {
  const what = d.rule ? `rule "${d.rule.rule}"` : `default "${d.effect}"`;
  const head = d.effect === "deny" ? `denied by ${what}` : `approval required by ${what}`;
  const reason = d.rule?.reason ? `: ${d.rule.reason}` : "";
  const note = d.note ? ` (${d.note})` : "";
  return `${audit ? "audit: would be " : ""}${head}${reason}${note}`;
}

function verdictOf(d: Decided, audit: boolean): Verdict {
  return {
    kind: "veto",
    advice: advice(d, audit),
    confidence: 1,
    rationale: `${d.layer.mode} rule set ${whereOf(d)}`,
    risk_tags: [`rules:${d.effect}`],
    ...(d.effect === "ask" ? { requires_approval: true } : {}),
    ...(audit ? { audit: true } : {}),
  };
}

/**
 * What the rule sets say about one pending action: nothing (allowed), a veto, a veto asking for approval, or an
 * audited veto that does not block.
 *
 * @example
 * ```ts
 * import { rulesVerdict } from "./policy.ts";
 * import { toLayer } from "./schema.ts";
 * const layer = toLayer({ deny: ["Bash(git push:*)"] }, { source: "noema.jsonc", field: "rules", base: "/p" });
 * rulesVerdict([layer], { kind: "tool", tool: "Bash", input: { command: "git push" }, command: "git push" }, "/p")?.kind;
 * // "veto"
 * ```
 */
export function rulesVerdict(
  layers: readonly RuleLayer[],
  action: PolicyState["action"],
  cwd: string,
  adapterEnv: Readonly<Record<string, string>> = {},
): Verdict | undefined {
  const found = ruleTarget(action, cwd);
  if (found === null) return undefined;
  const target = found.tool === "Bash" && found.command !== undefined
    ? withAdapterEnv(found, action, adapterEnv)
    : found;
  // A prompt's every URL meets the rules (Gemini's web_fetch fetches them all): the strictest decision stands.
  const targets = target.urls && target.urls.length > 1 ? target.urls.map((url) => ({ ...target, url })) : [target];
  const decided = layers.flatMap((layer) => targets.map((t) => ({ ...decideLayer(layer, t, { cwd }), layer })));
  const enforced = strictest(decided.filter((d) => d.layer.mode === "enforce"));
  if (enforced !== null && enforced.effect !== "allow") return verdictOf(enforced, false);
  const audited = strictest(decided.filter((d) => d.layer.mode === "audit"));
  if (audited !== null && audited.effect !== "allow") return verdictOf(audited, true);
  return undefined;
}

/**
 * A shell or command adapter's call as the program runs it: with the adapter's `env` (a task file's `adapter.env`)
 * assigned first, so that a variable that names a command (`GIT_EDITOR`, `GIT_SSH_COMMAND`, `BASH_ENV`…) meets the
 * rules as it would written in the line.
 */
function withAdapterEnv<T extends { command?: string }>(
  target: T,
  action: PolicyState["action"],
  env: Readonly<Record<string, string>>,
): T {
  const names = Object.keys(env).filter((k) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k));
  if (names.length === 0 || (action.kind !== "shell" && action.kind !== "command")) return target;
  // Assignments before the line (not `export`, which an allow-list would have to allow as a command of its own).
  const assignments = names.map((k) => `${k}=${shellQuote(env[k])}`).join(" ");
  return { ...target, command: `${assignments}; ${target.command}` };
}

/**
 * The environment a run's adapter gives its programs (`adapter.env`), as the rules read it: string values only.
 *
 * @example
 * ```ts
 * import { adapterEnvOf } from "./policy.ts";
 * adapterEnvOf({ env: { GIT_EDITOR: "vi", N: 1 } }); // { GIT_EDITOR: "vi" }
 * ```
 */
export function adapterEnvOf(adapter: unknown): Record<string, string> {
  const env = (adapter as { env?: unknown } | null | undefined)?.env;
  if (typeof env !== "object" || env === null || Array.isArray(env)) return {};
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === "string"));
}

/**
 * The rules policy for a run's rule sets, or null when there are none.
 *
 * @example
 * ```ts
 * import { rulesPolicy } from "./policy.ts";
 * import { toLayer } from "./schema.ts";
 * const policy = rulesPolicy([toLayer({ deny: ["Bash(git push:*)"] }, { source: "noema.jsonc", field: "rules", base: "/p" })]);
 * policy?.id; // "Rules@1.0"
 * ```
 */
export function rulesPolicy(
  layers: readonly RuleLayer[] | undefined,
  fallbackCwd?: string,
  adapterEnv: Readonly<Record<string, string>> = {},
): LoadedPolicy | null {
  if (!layers || layers.length === 0) return null;
  const frozen = structuredClone(layers);
  const env = { ...adapterEnv };
  return {
    id: RULES_POLICY_ID,
    name: RULES_POLICY.name,
    version: RULES_POLICY.version,
    path: null,
    sha256: canonicalHash(frozen),
    isolation: "thread",
    advise: (state: PolicyState) =>
      rulesVerdict(frozen, state.action, state.workspace ?? fallbackCwd ?? frozen.at(-1)!.base, env),
  };
}
