/**
 * Claude Code's own permission rules as a noema rule set: `"rules": { "import": ".claude/settings.json" }` in
 * `noema.jsonc` (or a task file) reads that settings file's `permissions.deny`, `permissions.ask` and
 * `permissions.allow` (JSONC; its other keys are Claude Code's and left alone), so a team keeps one copy of its
 * rules. The imported rules are a rule set of their own, beside the rules written next to the `import`: each set
 * decides, and the strictest answer wins (as between any two rule sets), so an imported `deny` or `ask` holds whatever
 * the other rules allow, and an imported `allow` lifts nothing the other rules deny or ask (nor their
 * `default: "deny"`). The imported set takes the `mode` of the `rules` key that imports it; its default is `allow`.
 *
 * @module
 */
import { existsSync, statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import * as v from "valibot";
import { EXIT, NoemaError } from "../../errors.ts";
import { parseJsoncFile, readSettingsFile } from "../jsonc.ts";
import { type RuleLayer, type RuleMode, RuleText, toLayer } from "./schema.ts";

/** The field of an imported layer (`permissions` of the Claude Code settings file). */
export const IMPORTED_FIELD = "permissions";

const Permissions = v.looseObject({
  deny: v.optional(v.array(RuleText)),
  ask: v.optional(v.array(RuleText)),
  allow: v.optional(v.array(RuleText)),
});

/**
 * The rule set of Claude Code's settings file at `path` (relative to `base`); a missing file, one that is not a
 * regular file, text that is not a JSON object or a rule noema cannot read is a located usage error (exit 2) naming
 * the file, and `namedBy` (where the import was written) for a missing one.
 *
 * @example
 * ```ts
 * import { importClaudeRules } from "./claude_import.ts";
 * // const layer = importClaudeRules(".claude/settings.json", "/p", "enforce", { file: "/p/noema.jsonc", field: "rules.import" });
 * ```
 */
export function importClaudeRules(
  path: string,
  base: string,
  mode: RuleMode,
  namedBy?: { file: string; field: string },
): RuleLayer {
  const abs = isAbsolute(path) ? path : resolve(base, path);
  if (!existsSync(abs) || !statSync(abs).isFile()) {
    const what = existsSync(abs) ? "is not a regular file" : "not found";
    throw new NoemaError("not_found", `Claude Code settings file to import ${what}: ${abs}`, {
      ...(namedBy ?? { file: abs }),
      exitCode: EXIT.USAGE,
    });
  }
  // Only `permissions` is noema's to check: the schema takes every other top-level key as it is.
  const value = parseJsoncFile(abs);
  const keys = value !== null && typeof value === "object" && !Array.isArray(value) ? Object.keys(value) : [];
  const schema = v.object({
    ...Object.fromEntries(keys.map((k) => [k, v.unknown()])),
    [IMPORTED_FIELD]: v.optional(Permissions),
  });
  const settings = readSettingsFile(abs, schema) as { permissions?: v.InferOutput<typeof Permissions> };
  const p = settings.permissions ?? {};
  return toLayer({ deny: p.deny, ask: p.ask, allow: p.allow, mode }, {
    source: abs,
    field: IMPORTED_FIELD,
    // `/path` rules: relative to the project (the importing file's folder), as Claude Code reads a project's rules.
    base,
  });
}
