/**
 * Where rule sets come from: the user's rules file
 * (`$XDG_CONFIG_HOME/noema/rules.jsonc`, by default
 * `~/.config/noema/rules.jsonc`; `NOEMA_USER_RULES` names another file, or
 * none when empty), the `rules` key (and the Claude Code settings its `import`
 * names) and `rules_file` of `noema.jsonc` and of
 * a task file, and `--rules FILE`. Each is read and checked when the settings
 * are loaded, so a bad rule is an error naming the file, the line and the
 * field (exit 2) before anything runs.
 *
 * @module
 */
import { existsSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../../errors.ts";
import * as v from "valibot";
import { parseJsoncFile, readSettingsFile } from "../jsonc.ts";
import { type RuleLayer, RuleSet, RulesFile, toLayer } from "./schema.ts";
import { importClaudeRules, IMPORTED_FIELD } from "./claude_import.ts";

/**
 * The user's rules file: `NOEMA_USER_RULES` when set (empty: none), else `$XDG_CONFIG_HOME/noema/rules.jsonc`
 * (`~/.config/noema/rules.jsonc`).
 *
 * @example
 * ```ts
 * import { userRulesPath } from "./load.ts";
 * userRulesPath(); // "/home/ana/.config/noema/rules.jsonc"
 * ```
 */
export function userRulesPath(): string | null {
  const named = process.env.NOEMA_USER_RULES;
  if (named !== undefined) return named === "" ? null : resolve(named);
  const config = process.env.XDG_CONFIG_HOME || join(process.env.HOME || homedir(), ".config");
  return join(config, "noema", "rules.jsonc");
}

/**
 * Reads a rules file (a JSONC rule set) into a layer; a missing file, one that is not a regular file (a FIFO, a
 * device, a directory) or a bad rule is a located usage error.
 *
 * @example
 * ```ts
 * import { loadRulesFile } from "./load.ts";
 * const layer = loadRulesFile("team-rules.jsonc");
 * ```
 */
export function loadRulesFile(path: string, namedBy?: { file: string; field: string }): RuleLayer {
  const abs = resolve(path);
  if (!existsSync(abs)) {
    throw new NoemaError("not_found", `rules file not found: ${path}`, {
      ...(namedBy ?? { file: path }),
      exitCode: EXIT.USAGE,
    });
  }
  // A FIFO, a device or a directory is refused without being opened for a blocking read (the read below opens
  // it non-blocking and checks again: what is swapped in meanwhile is refused the same way).
  const st = statSync(abs);
  if (!st.isFile()) {
    const kind = st.isFIFO() ? "a FIFO" : st.isDirectory() ? "a directory" : "a device or socket";
    throw new NoemaError("not_regular", `rules file is not a regular file (${kind})`, {
      ...(namedBy ?? { file: path }),
      exitCode: EXIT.USAGE,
    });
  }
  const { $schema: _schema, ...set } = readSettingsFile(abs, RulesFile);
  return toLayer(set, { source: abs, field: "", base: dirname(abs) });
}

/**
 * The user's rule set, when the user has a rules file.
 *
 * @example
 * ```ts
 * import { userRuleLayers } from "./load.ts";
 * userRuleLayers().length; // 0 or 1
 * ```
 */
export function userRuleLayers(): RuleLayer[] {
  const path = userRulesPath();
  return path !== null && existsSync(path) ? [loadRulesFile(path)] : [];
}

/**
 * The layers a settings file brings: its `rules` key, the Claude Code rules it imports (`rules.import`), then its
 * `rules_file` (relative to the file).
 *
 * @example
 * ```ts
 * import { settingsRuleLayers } from "./load.ts";
 * settingsRuleLayers({ rules: { deny: ["Bash(git push:*)"] } }, "/p/noema.jsonc").length; // 1
 * ```
 */
export function settingsRuleLayers(s: { rules?: RuleSet; rules_file?: string }, source: string): RuleLayer[] {
  const out: RuleLayer[] = [];
  const base = dirname(source);
  const { import: imported, ...own } = s.rules ?? {};
  // A `rules` key holding only an import adds no set of its own (it would decide nothing).
  if (s.rules !== undefined && (imported === undefined || Object.keys(own).some((k) => k !== "mode"))) {
    out.push(toLayer(s.rules, { source, field: "rules", base }));
  }
  if (imported !== undefined) {
    out.push(importClaudeRules(imported, base, own.mode ?? "enforce", { file: source, field: "rules.import" }));
  }
  if (s.rules_file !== undefined) {
    const file = isAbsolute(s.rules_file) ? s.rules_file : resolve(base, s.rules_file);
    out.push(loadRulesFile(file, { file: source, field: "rules_file" }));
  }
  return out;
}

/**
 * Layers in order with repeats removed (one file named twice counts once, where it first came).
 *
 * @example
 * ```ts
 * import { mergeRuleLayers } from "./load.ts";
 * mergeRuleLayers([], []); // []
 * ```
 */
export function mergeRuleLayers(lower: readonly RuleLayer[], higher: readonly RuleLayer[]): RuleLayer[] {
  const seen = new Set<string>();
  return [...lower, ...higher].filter((l) => {
    const key = `${l.source}\0${l.field}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * The layers read again from their files (a rules file, or the `rules` key of a settings file), for an episode whose
 * recorded rules were masked (a rule holding what looks like a secret): the caller checks they hash as recorded.
 *
 * @example
 * ```ts
 * import { rereadRuleLayers } from "./load.ts";
 * // const fresh = rereadRuleLayers(record.rules);
 * ```
 */
export function rereadRuleLayers(layers: readonly RuleLayer[]): RuleLayer[] {
  return layers.map((l) => {
    if (l.field === "") return { ...loadRulesFile(l.source), base: l.base };
    if (l.field === IMPORTED_FIELD) return importClaudeRules(l.source, l.base, l.mode);
    const value = (parseJsoncFile(l.source) as Record<string, unknown> | null)?.[l.field];
    return toLayer(v.parse(RuleSet, value), { source: l.source, field: l.field, base: l.base });
  });
}
