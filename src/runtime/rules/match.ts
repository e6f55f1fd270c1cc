/**
 * Matching one rule against one tool call, and deciding a rule set: deny
 * beats ask, ask beats allow, and a call no rule matches gets the set's
 * `default`.
 *
 * A `Bash` call is checked command by command (see `unwrap.ts`): a deny or
 * ask rule matches when any command of the line, at any stage of its
 * wrappers, matches it; an allow rule set lets the line through only when
 * every command is allowed (as written, or once unwrapped). A line that
 * cannot be read, or a command whose name or tail is only known when it runs
 * (`$CMD push`, `git $SUB`), matches every deny and ask rule it could match,
 * and no allow rule: the rules fail closed.
 *
 * @module
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import picomatch from "picomatch";
import { commandPattern, couldMatch, matchesCommand } from "./pattern.ts";
import { type ParsedRule, parseRule } from "./rule.ts";
import type { RuleEffect, RuleLayer } from "./schema.ts";
import { ruleCovers, type RuleTarget } from "./tools.ts";
import { type CommandUnits, commandUnits, type Stage } from "./unwrap.ts";
import { type AccessMode, type FileAccess, fileAccesses } from "./file_access.ts";
import { accessHit, pathUnderRule } from "./file_rules.ts";
import { resolvedPaths } from "./resolve_path.ts";

/** What a rule set decided about one call. */
export interface LayerDecision {
  effect: RuleEffect;
  /** The rule that decided, or null when the default did. */
  rule: RuleLayer["rules"][number] | null;
  /** Why, when it is not plain (a command that could not be read). */
  note: string | null;
}

/** Where relative paths start: the cwd of the call, and the home directory. */
export interface MatchContext {
  cwd: string;
  home?: string;
}

/** A call with what matching needs computed once. */
interface Subject {
  target: RuleTarget;
  units: CommandUnits | null;
  /** The files a `Bash` line reads and writes, once asked for. */
  files?: FileAccess[];
  /** Each path's spellings (see `resolve_path.ts`), and each real path asked for, once per decision. */
  resolved?: Map<string, string[]>;
  real?: Map<string, string | null>;
}

/** The file rules that hold against shell commands, and what they cover: reads, or writes. */
const SHELL_FILE_RULES: Record<string, AccessMode> = {
  Read: "read",
  Edit: "write",
  Write: "write",
  MultiEdit: "write",
};

/** Compiled patterns and matchers, kept across calls (a hook server decides many calls with the same rules). */
const compiled = new Map<string, unknown>();
function cached<T>(key: string, make: () => T): T {
  if (!compiled.has(key)) {
    if (compiled.size > 2000) compiled.clear();
    compiled.set(key, make());
  }
  return compiled.get(key) as T;
}
const patternOf = (spec: string) => cached(`cmd\0${spec}`, () => commandPattern(spec));
const parsedRules = new WeakMap<RuleLayer, { entry: RuleLayer["rules"][number]; rule: ParsedRule }[]>();

/** Each stage's text, joined once however many rules look at it. */
const stageTexts = new WeakMap<Stage, string>();
function stageText(stage: Stage): string {
  let text = stageTexts.get(stage);
  if (text === undefined) stageTexts.set(stage, text = stage.map((w) => w.text).join(" "));
  return text;
}

/** The literal text of a stage up to its first word known only at run time, or null when it has none. */
function stagePrefix(stage: Stage): string | null {
  const k = stage.findIndex((w) => w.dynamic);
  if (k === -1) return null;
  return [...stage.slice(0, k).map((w) => w.text), stage[k].literal].join(" ");
}

/** Whether a deny or ask `Bash` rule matches the line (or could: unknown parts fail closed). */
function bashBlocks(rule: ParsedRule, s: Subject): { match: boolean; note: string | null } {
  if (rule.specifier === null) return { match: true, note: null };
  const { units, problem, alternates } = s.units!;
  if (problem !== null) return { match: true, note: `the command could not be read (${problem})` };
  const pattern = patternOf(rule.specifier);
  for (const unit of [...units, ...alternates]) {
    for (const stage of unit) {
      if (matchesCommand(pattern, stageText(stage))) return { match: true, note: null };
      const prefix = stagePrefix(stage);
      if (prefix !== null && couldMatch(pattern, prefix)) {
        return { match: true, note: `"${stageText(stage)}" is only known when it runs` };
      }
    }
  }
  return { match: false, note: null };
}

/** The allow rule that lets every command of the line through, or null. */
function bashAllowedBy(rules: readonly ParsedRule[], s: Subject): ParsedRule | null {
  const bare = rules.find((r) => r.specifier === null);
  if (bare) return bare;
  const { units, problem } = s.units!;
  if (problem !== null || units.length === 0) return null;
  let last: ParsedRule | null = null;
  for (const unit of units) {
    const texts = [unit[0], unit.at(-1)!].map(stageText);
    const rule = rules.find((r) => texts.some((t) => matchesCommand(patternOf(r.specifier!), t)));
    if (!rule) return null;
    last = rule;
  }
  return last;
}

/** The absolute glob a path rule stands for (gitignore-style anchoring). */
function pathGlob(spec: string, base: string, ctx: MatchContext): string {
  const home = ctx.home ?? homedir();
  if (spec.startsWith("//")) return spec.slice(1);
  if (spec === "~" || spec.startsWith("~/")) return join(home, spec.slice(1));
  if (spec.startsWith("/")) return join(base, spec);
  if (spec.startsWith("./")) return join(resolve(ctx.cwd), spec.slice(2));
  const inner = spec.replace(/\/+$/, "");
  // A pattern with no slash but a trailing one matches at any depth, as in .gitignore.
  return inner.includes("/") ? join(resolve(ctx.cwd), inner) : join(resolve(ctx.cwd), "**", inner);
}

/**
 * Whether a file rule holds against a call's paths: a deny or ask rule (`blocking`) when any path falls under it (in
 * any letter case), an allow rule only when every one does (Gemini's read_many_files of src/a.ts and /etc/shadow is
 * not allowed by Read(./src/**)).
 */
function pathMatches(spec: string, base: string, paths: readonly string[], ctx: MatchContext, blocking: boolean) {
  // A directory pattern covers what is inside it; a path counts by each of its spellings (see resolve_path.ts).
  const glob = pathGlob(spec, base, ctx).replace(/\/+$/, "");
  if (blocking) return paths.some((p) => pathUnderRule(p, glob, "/", true));
  return paths.length > 0 && paths.every((p) => pathUnderRule(p, glob, "/", false));
}

/** Whether a deny or ask file rule holds against a `Bash` line: a file it reads or writes falls under it. */
function shellFileBlocks(rule: ParsedRule, base: string, s: Subject, ctx: MatchContext): LayerDecision["note"] | false {
  const { problem } = s.units!;
  if (problem !== null) return `the command could not be read (${problem})`;
  // The command's paths against where it runs; a rule's `./` stays the workspace's (ctx.cwd).
  s.files ??= fileAccesses(s.units!, { cwd: resolve(s.target.cwd ?? ctx.cwd), home: ctx.home ?? homedir() });
  const mode = SHELL_FILE_RULES[rule.tool];
  const glob = rule.specifier === null ? null : pathGlob(rule.specifier, base, ctx).replace(/\/+$/, "");
  const resolved = s.resolved ??= new Map();
  for (const access of s.files) {
    if (access.mode !== mode) continue;
    // Each path is resolved once per decision (the file system is asked again at the next call).
    if (access.form === "path" && !access.spellings) {
      access.spellings = resolved.get(access.path) ??
        resolved.set(access.path, resolvedPaths(access.path, "/", s.real ??= new Map()))
          .get(access.path);
    }
    const hit = glob === null ? null : accessHit(access, glob);
    if (hit !== false) return hit;
  }
  return false;
}

/**
 * The host a URL names, as a fetcher given it would read it: as written when it has a scheme, else as https
 * (`evil.example/x`, `//evil.example/x`); null when it cannot be read. A fully qualified name's trailing dot names the same host
 * (`https://evil.com./` fetches evil.com).
 */
function hostOf(url: string): string | null {
  const schemed = /^[a-z][a-z0-9+.-]*:/i.test(url);
  const reading = schemed ? url : url.startsWith("//") ? `https:${url}` : `https://${url}`;
  try {
    return new URL(reading).hostname.toLowerCase().replace(/\.+$/, "");
  } catch {
    return null;
  }
}

/** Whether a `domain:` rule names the URL's host; a URL no reading makes sense of meets deny and ask rules (`blocking`). */
function domainMatches(spec: string, url: string | null | undefined, blocking: boolean): boolean {
  if (!url) return false;
  const host = hostOf(url);
  if (host === null) return blocking;
  const domain = spec.slice("domain:".length).toLowerCase().replace(/\.+$/, "");
  return picomatch.isMatch(host, domain, { dot: true }) || host === domain;
}

/**
 * Whether an `mcp__` rule names the tool. Its `*` (the only wildcard an `mcp__` rule takes) matches any run of
 * characters, `/` included: a tool name is no path, and a server naming a tool `files/write` must not slip past
 * `mcp__evil__*` (picomatch's `*` stopped at the `/`).
 */
function mcpMatches(ruleTool: string, tool: string): boolean {
  if (ruleTool.includes("*")) {
    const re = cached(`mcp\0${ruleTool}`, () => {
      const parts = ruleTool.split("*").map((p) => p.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&"));
      return new RegExp(`^${parts.join("[\\s\\S]*")}$`);
    });
    return re.test(tool);
  }
  return tool === ruleTool || tool.startsWith(`${ruleTool}__`) && ruleTool.split("__").length === 2;
}

/** Whether a non-Bash rule matches the call; a path in any letter case for a deny or ask rule (`blocking`). */
function otherMatches(rule: ParsedRule, base: string, s: Subject, ctx: MatchContext, blocking: boolean): boolean {
  const t = s.target;
  if (rule.tool.startsWith("mcp__")) return mcpMatches(rule.tool, t.tool);
  if (!ruleCovers(rule.tool, t.tool)) return false;
  if (rule.specifier === null) return true;
  if (t.paths !== undefined) return pathMatches(rule.specifier, base, t.paths, ctx, blocking);
  if (t.tool === "WebFetch") return domainMatches(rule.specifier, t.url, blocking);
  return matchesCommand(patternOf(rule.specifier), t.subject ?? "");
}

/**
 * Whether a deny or ask file rule holds against what a search or MCP call reaches beyond its named paths: the
 * globs of `Glob`/`Grep`, the folders a `Grep` reads whole, the path arguments of an MCP tool. False, or why.
 */
function scopeBlocks(rule: ParsedRule, base: string, s: Subject, ctx: MatchContext): LayerDecision["note"] | false {
  const t = s.target;
  const mcp = t.tool.startsWith("mcp__") && Object.hasOwn(SHELL_FILE_RULES, rule.tool);
  if (!mcp && !(ruleCovers(rule.tool, t.tool) && (t.globs || t.trees))) return false;
  if (rule.specifier === null) return mcp ? null : false;
  if (mcp && t.unsearched) return `${t.tool}: ${t.unsearched}`; // what cannot be read fails closed
  const glob = pathGlob(rule.specifier, base, ctx).replace(/\/+$/, "");
  const accesses: FileAccess[] = [
    ...(mcp ? t.paths ?? [] : []).map((path): FileAccess => ({ mode: "read", form: "path", path, by: t.tool })),
    ...(t.globs ?? []).map((path): FileAccess => ({ mode: "read", form: "glob", path, by: t.tool })),
    ...(t.trees ?? []).map((path): FileAccess => ({ mode: "read", form: "path", path, by: t.tool, tree: true })),
  ];
  for (const access of accesses) {
    const hit = accessHit(access, glob);
    if (hit !== false) return hit;
  }
  return false;
}

/**
 * Decides one rule set about one call: the first deny rule that matches, else
 * the first ask rule, else an allow rule, else the set's default.
 *
 * @example
 * ```ts
 * import { decideLayer } from "./match.ts";
 * import { toLayer } from "./schema.ts";
 * const layer = toLayer({ deny: ["Bash(git push:*)"] }, { source: "noema.jsonc", field: "rules", base: "/p" });
 * decideLayer(layer, { tool: "Bash", command: "cd x && git push" }, { cwd: "/p" }).effect; // "deny"
 * ```
 */
export function decideLayer(layer: RuleLayer, target: RuleTarget, ctx: MatchContext): LayerDecision {
  const s: Subject = { target, units: target.tool === "Bash" ? commandUnits(target.command ?? "") : null };
  let parsed = parsedRules.get(layer);
  if (!parsed) parsedRules.set(layer, parsed = layer.rules.map((r) => ({ entry: r, rule: parseRule(r.rule) })));
  for (const effect of ["deny", "ask"] as const) {
    for (const { entry, rule } of parsed) {
      if (entry.effect !== effect) continue;
      if (target.tool === "Bash" && rule.tool === "Bash") {
        const hit = bashBlocks(rule, s);
        if (hit.match) return { effect, rule: entry, note: hit.note };
      } else if (target.tool === "Bash" && Object.hasOwn(SHELL_FILE_RULES, rule.tool)) {
        const note = shellFileBlocks(rule, layer.base, s, ctx);
        if (note !== false) return { effect, rule: entry, note };
      } else if (otherMatches(rule, layer.base, s, ctx, true)) return { effect, rule: entry, note: null };
      else {
        const note = scopeBlocks(rule, layer.base, s, ctx);
        if (note !== false) return { effect, rule: entry, note };
      }
    }
  }
  const allows = parsed.filter((p) => p.entry.effect === "allow");
  if (target.tool === "Bash") {
    const by = bashAllowedBy(allows.filter((p) => p.rule.tool === "Bash").map((p) => p.rule), s);
    if (by) return { effect: "allow", rule: allows.find((p) => p.rule === by)!.entry, note: null };
  } else {
    const hit = allows.find((p) => otherMatches(p.rule, layer.base, s, ctx, false));
    if (hit) return { effect: "allow", rule: hit.entry, note: null };
  }
  const note = s.units?.problem ? `the command could not be read (${s.units.problem})` : null;
  return { effect: layer.default, rule: null, note };
}
