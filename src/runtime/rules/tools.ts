/**
 * Every agent's tool call in one vocabulary, Claude Code's, so one rule
 * covers the same call whoever makes it:
 *
 * | rule tool | Claude Code | Codex CLI | Gemini CLI | noema (`shell`, `command`, `llm`) |
 * |---|---|---|---|---|
 * | `Bash` | `Bash` | `Bash` | `run_shell_command` | shell and command actions; `shell` |
 * | `Read` | `Read`, `Glob`, `Grep`, `LS` | — | `read_file`, `read_many_files`, `glob`, `search_file_content`, `grep_search`, `list_directory` | `read_file`, `list_dir`, `search` |
 * | `Edit` | `Edit`, `MultiEdit`, `Write`, `NotebookEdit` | `apply_patch` | `replace`, `write_file` | `edit_file`, `write_file` |
 * | `Write` | `Write` | — | `write_file` | `write_file` |
 * | `WebFetch` | `WebFetch` | — | `web_fetch` | — |
 * | `WebSearch` | `WebSearch` | — | `google_web_search` | — |
 * | `mcp__server__tool` | MCP tools | MCP tools | — | MCP tools |
 *
 * A `Read` rule covers every tool that reads (`Glob`, `Grep`, `LS`…), an
 * `Edit` rule every tool that changes a file (as in Claude Code); any other
 * rule names its tool exactly.
 *
 * @module
 */
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { MAX_VALUE_DEPTH } from "../../store/limits.ts";
import { ownEntry } from "../../json.ts";

/** A tool call as the rules see it. */
export interface RuleTarget {
  /** The tool in Claude Code's vocabulary (`Bash`, `Edit`…), or the call's own name. */
  tool: string;
  /** For `Bash`: the command line. */
  command?: string;
  /** For file tools: the absolute paths the call touches (for MCP tools: the values of their path arguments). */
  paths?: string[];
  /** For `Glob`, and `Grep` given a `glob`: the absolute globs of the files it looks at. */
  globs?: string[];
  /** For `Grep` with no `glob`, and MCP tools that search or list: folders it reads whole. */
  trees?: string[];
  /** For `WebFetch`: the URL. */
  url?: string | null;
  /** For `WebFetch` given a prompt (Gemini's `web_fetch`): every URL it fetches; each meets the rules. */
  urls?: string[];
  /**
   * For `Bash`: the directory the command runs in when the call says (the agent's shell after a `cd`, Gemini's
   * `dir_path`, Codex's `workdir`); its relative paths are read against it.
   */
  cwd?: string;
  /** For other tools: the text a specifier is matched against. */
  subject?: string;
  /**
   * For MCP tools whose arguments nest too deep or hold too many values to be searched for paths: why. Every deny
   * and ask file rule then holds (what cannot be read fails closed).
   */
  unsearched?: string;
}

/** The tools each rule tool covers, beyond its own name. */
const COVERS: Record<string, readonly string[]> = {
  Read: ["Read", "Glob", "Grep", "LS", "NotebookRead"],
  Edit: ["Edit", "MultiEdit", "Write", "NotebookEdit"],
};

/** Other agents' tool names, in Claude Code's vocabulary. */
const ALIASES: Record<string, string> = {
  run_shell_command: "Bash",
  shell: "Bash",
  read_file: "Read",
  read_many_files: "Read",
  list_directory: "LS",
  list_dir: "LS",
  glob: "Glob",
  search_file_content: "Grep",
  grep_search: "Grep",
  search: "Grep",
  write_file: "Write",
  replace: "Edit",
  edit_file: "Edit",
  apply_patch: "Edit",
  web_fetch: "WebFetch",
  google_web_search: "WebSearch",
};

/**
 * Whether `name` is another agent's tool name that the rules map onto Claude Code's (`run_shell_command`,
 * `apply_patch`, `read_file`…).
 *
 * @example
 * ```ts
 * import { isAgentToolName } from "./tools.ts";
 * isAgentToolName("run_shell_command"); // true
 * ```
 */
export function isAgentToolName(name: string): boolean {
  return Object.hasOwn(ALIASES, name);
}

const PATH_KEYS = ["file_path", "notebook_path", "absolute_path", "path", "dir_path", "directory"];

/**
 * Whether a rule naming `ruleTool` covers a call of `tool` (both in Claude Code's vocabulary).
 *
 * @example
 * ```ts
 * import { ruleCovers } from "./tools.ts";
 * ruleCovers("Edit", "Write"); // true
 * ```
 */
export function ruleCovers(ruleTool: string, tool: string): boolean {
  return ruleTool === tool || (ownEntry(COVERS, ruleTool)?.includes(tool) ?? false);
}

function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  return Array.isArray(value) ? value.filter((x): x is string => typeof x === "string") : [];
}

/**
 * The files a patch text in Codex's `apply_patch` format names (added, updated, deleted, moved to).
 *
 * @example
 * ```ts
 * import { patchFiles } from "./tools.ts";
 * patchFiles("*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"); // ["a.txt"]
 * ```
 */
export function patchFiles(text: string): string[] {
  const out: string[] = [];
  // Codex trims each hunk header line before reading it (codex-rs/apply-patch parser.rs: `lines[0].trim()`).
  for (const m of text.matchAll(/^\s*\*\*\* (?:Add|Update|Delete) File: (.+)$|^\s*\*\*\* Move to: (.+)$/gm)) {
    out.push((m[1] ?? m[2]).trim());
  }
  return out;
}

/** The files a patch in Codex's `apply_patch` format names, in any of the call's string arguments. */
function patchPaths(input: Record<string, unknown>): string[] {
  return Object.values(input).flatMap((v) => typeof v === "string" ? patchFiles(v) : []);
}

/**
 * The files one path argument may name, to be safe both ways (a deny rule holds when any of them is under it, an
 * allow rule only when all are): the path as written and without the spaces around it; `~` and `~/…` as written and
 * under the home directory (Claude Code expands them, a shell tool may not); a relative path against each base, where
 * the call runs (the agent's cwd, which a `cd` moves) and the workspace.
 *
 * @example
 * ```ts
 * import { pathCandidates } from "./tools.ts";
 * pathCandidates(" ../.env ", ["/w/sub", "/w"]); // ["/w/sub/ ../.env ", "/w/ ../.env ", "/w/.env", "/.env"]
 * ```
 */
export function pathCandidates(path: string, bases: readonly string[]): string[] {
  const trimmed = path.trim();
  const out = new Set<string>();
  for (const p of trimmed === path || trimmed === "" ? [path] : [path, trimmed]) {
    if (p === "~" || p.startsWith("~/")) out.add(join(homedir(), p.slice(1)));
    if (isAbsolute(p)) out.add(resolve(p));
    else for (const base of bases) out.add(resolve(base, p));
  }
  return [...out];
}

/** Where a call's relative paths may start: where it runs, when the agent says, and the workspace. */
function bases(action: ActionLike, cwd: string): string[] {
  const at = action.cwd === undefined || action.cwd === "" ? undefined : resolve(cwd, action.cwd);
  return at === undefined || at === resolve(cwd) ? [resolve(cwd)] : [at, resolve(cwd)];
}

function filePaths(tool: string, original: string, input: Record<string, unknown>, from: readonly string[]): string[] {
  let raw = PATH_KEYS.flatMap((k) => strings(input[k]));
  if (original === "apply_patch") raw = patchPaths(input);
  if (original === "read_many_files") raw = [...raw, ...strings(input.paths), ...strings(input.include)];
  // Glob, Grep and LS without a path look at the cwd.
  if (raw.length === 0 && (tool === "Glob" || tool === "Grep" || tool === "LS")) raw = ["."];
  return [...new Set(raw.flatMap((p) => pathCandidates(p, from)))];
}

/** The arguments of MCP tools that name files (`mcp__filesystem__read_file`'s `path`, `move_file`'s `source`…). */
const MCP_PATH_KEYS = [
  "path",
  "paths",
  "file_path",
  "filePath",
  "file",
  "files",
  "filename",
  "source",
  "destination",
  "directory",
  "dir",
  "dir_path",
  "notebook_path",
  "absolute_path",
  "target",
  // A copy's or a move's ends, and what a tool writes to (found by a break-it run: `dest`, `to`, `output` passed).
  "dest",
  "dst",
  "to",
  "from",
  "output",
  "out",
  "outfile",
  "infile",
  "root",
];

/**
 * The globs of a `Grep` call's `glob`, as Claude Code hands them to ripgrep: split on whitespace, and each piece
 * without braces on commas (`"*.md,.env"` is two globs); a `!` first makes a piece an exclusion, which narrows
 * nothing here (what it leaves is searched whole).
 */
function grepGlobs(glob: string): string[] {
  const pieces = glob.split(/\s+/).flatMap((p) => p.includes("{") && p.includes("}") ? [p] : p.split(","));
  return pieces.filter((p) => p !== "" && !p.startsWith("!"));
}

/** The globs a `Glob` or `Grep` call looks at (its pattern, or its `glob`/`include` under its path), and the folders a `Grep` with none reads whole. */
function searchScope(tool: string, input: Record<string, unknown>, paths: string[], cwd: string) {
  const globs: string[] = [], trees: string[] = [];
  const bases = paths.length > 0 ? paths : [resolve(cwd)];
  const pattern = tool === "Glob" ? input.pattern : (input.glob ?? input.include);
  const patterns = typeof pattern !== "string"
    ? []
    : tool === "Grep"
    ? grepGlobs(pattern)
    : pattern === ""
    ? []
    : [pattern];
  for (const base of bases) {
    if (patterns.length === 0) {
      if (tool === "Grep") trees.push(base);
      continue;
    }
    for (const p of patterns) {
      const rel = tool === "Grep" && !p.includes("/") ? `**/${p}` : p;
      globs.push(isAbsolute(rel) ? rel : join(base, rel));
    }
  }
  return { globs, trees };
}

/** An MCP call's path arguments, and the folders it reads whole when its name says it searches or lists. */
/**
 * The files an MCP argument may name: a `file://` URI as its path; any other as {@link pathCandidates} says (servers
 * such as the filesystem server expand `~`).
 */
function mcpPaths(p: string, from: readonly string[]): string[] {
  if (/^file:/i.test(p)) {
    try {
      return [fileURLToPath(p)];
    } catch {
      return from.map((base) => resolve(base, p));
    }
  }
  return pathCandidates(p, from);
}

/** The last words of an argument name that say it names files (`repo_path`, `outputDir`, `fileName`, `Path`). */
const MCP_PATH_WORDS = new Set([
  "path",
  "paths",
  "filepath",
  "filepaths",
  "pathname",
  "pathnames",
  "src",
  "location",
  "file",
  "files",
  "filename",
  "filenames",
  "dir",
  "dirs",
  "directory",
  "directories",
  "folder",
  "folders",
  "cwd",
  "dest",
  "dst",
  "destination",
  "output",
  "outfile",
  "infile",
]);

/** Whether an MCP argument's name says it names files: one of {@link MCP_PATH_KEYS}, or ending in a path word. */
function pathKey(key: string): boolean {
  if (MCP_PATH_KEYS.includes(key)) return true;
  const words = key.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
  const last = words.at(-1) ?? "";
  return MCP_PATH_WORDS.has(last) || (words.length > 1 && MCP_PATH_WORDS.has(words.at(-2)! + last));
}

/**
 * How deep, and how many values, the arguments are searched for paths: as deep as noema records a value at all, and
 * more values than a call's input can hold under noema's limits; past either, the call fails closed (`unsearched`).
 */
const ARG_DEPTH = MAX_VALUE_DEPTH, ARG_VALUES = 1_000_000;

/**
 * The path arguments of an MCP call, wherever they are in its arguments: a string (or strings) under a name that
 * says it names files, at any depth (`{options: {path}}`, `{files: [{path}]}`), and any `file:` URI under any name
 * (`{url: "file:///…"}`); `unsearched` when the arguments nest deeper or hold more values than are searched.
 */
function mcpPathArgs(input: Record<string, unknown>): { paths: string[]; unsearched: boolean } {
  const out: string[] = [];
  let seen = 0, unsearched = false;
  // named: under a name that says it names files; "uri": under `uri`/`url`, where a value that reads as a path is one.
  const walk = (value: unknown, named: boolean | "uri", depth: number): void => {
    if (++seen > ARG_VALUES || depth > ARG_DEPTH) {
      unsearched = true;
      return;
    }
    if (typeof value === "string") {
      // Under `uri`/`url`: a path (absolute, `~`, `./`) or a reference with no scheme (`secrets/key.txt`).
      const uriPath = named === "uri" && (/^(?:\/|~|\.\.?\/)/.test(value) || !/^[a-z][a-z0-9+.-]*:/i.test(value));
      if (named === true || /^file:/i.test(value) || uriPath) {
        out.push(value);
      }
    } else if (Array.isArray(value)) {
      for (const v of value) walk(v, named, depth + 1);
    } else if (typeof value === "object" && value !== null) {
      for (const [k, v] of Object.entries(value)) {
        walk(v, pathKey(k) || (/^ur[il]s?$/i.test(k) ? "uri" : false), depth + 1);
      }
    }
  };
  walk(input, false, 0);
  return { paths: out, unsearched };
}

function mcpScope(tool: string, input: Record<string, unknown>, from: readonly string[]) {
  const args = mcpPathArgs(input);
  const paths = [...new Set(args.paths.flatMap((p) => mcpPaths(p, from)))];
  const trees = /search|find|grep|tree|list|glob/i.test(tool) ? paths : [];
  const unsearched = args.unsearched
    ? `its arguments nest deeper than ${ARG_DEPTH} levels or hold more than ${ARG_VALUES} values, not searched ` +
      "for paths"
    : undefined;
  return { paths, trees, ...(unsearched ? { unsearched } : {}) };
}

/** The action's fields the mapping reads (what `PolicyState.action` holds). */
export interface ActionLike {
  kind: string;
  tool: string;
  input: Readonly<Record<string, unknown>>;
  command: string;
  /** The directory the call runs in, when the agent says (a hook event's `cwd`). */
  cwd?: string;
}

/**
 * The URLs a prompt makes Gemini's `web_fetch` fetch: as Gemini reads them, each whitespace-separated word holding
 * `://` that the URL parser takes (which drops control characters and spaces around it: `\u0001https://…` is a URL
 * to it) as http(s), in any letter case (it fetches up to 20; every one of them is here, so none gets past a rule).
 */
function promptUrls(prompt: string): string[] {
  const out: string[] = [];
  for (const word of prompt.split(/\s+/)) {
    if (!word.includes("://")) continue;
    try {
      const url = new URL(word);
      if (url.protocol === "http:" || url.protocol === "https:") out.push(url.href);
    } catch {
      if (/^https?:\/\//i.test(word)) out.push(word); // not a URL to the parser: the word itself meets the rules
    }
  }
  return out;
}

/**
 * A pending action in the rules' vocabulary, or null when it runs nothing
 * (a shell step with no command).
 *
 * @example
 * ```ts
 * import { ruleTarget } from "./tools.ts";
 * ruleTarget({ kind: "tool", tool: "run_shell_command", input: { command: "ls" }, command: "ls" }, "/w").tool; // "Bash"
 * ```
 */
export function ruleTarget(action: ActionLike, cwd: string): RuleTarget | null {
  const input = action.input as Record<string, unknown>;
  if (action.kind === "shell" || action.kind === "command") {
    const runs = typeof input.command === "string" || Array.isArray(input.argv);
    return runs ? { tool: "Bash", command: action.command } : null;
  }
  const tool = ownEntry(ALIASES, action.tool) ?? action.tool;
  if (tool === "Bash") {
    const command = typeof input.command === "string" ? input.command : action.command;
    // Where it runs, when the call says (the agent's shell after a `cd`, Gemini's dir_path, Codex's workdir): the
    // command's relative paths are read against that directory; the rules' own `./` paths stay the workspace's.
    const dir = [input.dir_path, input.workdir].find((d): d is string => typeof d === "string" && d !== "");
    const at = dir === undefined ? action.cwd : resolve(action.cwd ?? cwd, dir);
    return at === undefined ? { tool, command } : { tool, command, cwd: resolve(at) };
  }
  if (ruleCovers("Read", tool) || ruleCovers("Edit", tool)) {
    const paths = filePaths(tool, action.tool, input, bases(action, cwd));
    // Gemini's read_many_files takes globs (`src/**/*.ts`) in its paths and include.
    if (action.tool === "read_many_files") return { tool, paths, globs: paths };
    if (tool !== "Glob" && tool !== "Grep") return { tool, paths };
    return { tool, paths, ...searchScope(tool, input, paths, cwd) };
  }
  if (tool === "WebFetch") {
    if (typeof input.url === "string") return { tool, url: input.url };
    const urls = promptUrls(typeof input.prompt === "string" ? input.prompt : "");
    return { tool, url: urls[0] ?? null, urls };
  }
  const subject = ["subagent_type", "query", "skill", "command"].map((k) => input[k]).find((x) =>
    typeof x === "string"
  );
  const named = { tool, subject: typeof subject === "string" ? subject : action.command };
  if (!tool.startsWith("mcp__")) return named;
  const scope = mcpScope(tool, input, bases(action, cwd));
  return scope.paths.length > 0 || scope.unsearched ? { ...named, ...scope } : named;
}
