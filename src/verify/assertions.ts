/**
 * Verification assertions: their specs (valibot schemas, the single source of
 * truth for the verify file format and its JSON Schema), parsing with located
 * usage errors, and evaluation against the POST state of a workspace.
 *
 * Input aliases accepted (as in the reference system): the kind key may be
 * `kind`, `name` or `type` (case-insensitive value); `target` stands for
 * `path` (and for `paths` in `only_modified`, where a single string is also
 * accepted); `content` stands for `text`.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, lstatSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { Buffer } from "node:buffer";
import { isAbsolute, posix, resolve } from "node:path";
import process from "node:process";
import { nodeUrl } from "../builtins.ts";
import picomatch from "picomatch";
import * as v from "valibot";
import { EXIT, NoemaError } from "../errors.ts";
import type { AssertionResult, WorkspaceDiff } from "../schema/summary.ts";
import { comparePaths, errCode, isIgnored, type Snapshot } from "./snapshot.ts";
import { jsonType, ownEntry } from "../json.ts";
import { didYouMean } from "../did_you_mean.ts";

/** `did you mean "x"? ` before a list of choices, or nothing. */
const hintOf = (near: string | undefined): string => near === undefined ? "" : `did you mean ${JSON.stringify(near)}? `;
import { childEnv } from "../plugins/process.ts";
import { MAX_TIMER_MS } from "../store/limits.ts";

/** Default `timeout_ms` of `command_succeeds`: 60 s. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 60_000;
/** Largest file `file_contains` with `regex: true` and `json_equals` read (64 MiB). */
export const MAX_READ_BYTES = 64 << 20;

const RelPath = v.pipe(
  v.string(),
  v.minLength(1, "must not be empty"),
  v.check((p) => !isAbsolute(p) && !/^[A-Za-z]:[\\/]/.test(p), "must be relative to the workspace"),
  v.check((p) => {
    const n = posix.normalize(p.replace(/\\/g, "/"));
    return n !== ".." && !n.startsWith("../");
  }, "must stay inside the workspace"),
  v.description("Workspace-relative path (POSIX separators)."),
);

const JsonPointer = v.pipe(
  v.string(),
  v.check(
    (p) => p === "" || (p.startsWith("/") && !/~[^01]|~$/.test(p)),
    'must be an RFC 6901 JSON pointer: "" or "/a/b" (escape "~" as ~0 and "/" as ~1)',
  ),
  v.description('RFC 6901 JSON pointer, e.g. "/scripts/test"; "" is the whole document.'),
);

/**
 * `{kind: "file_exists", path}`: passes when `path` is a regular file in the
 * POST snapshot.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { FileExistsSpec } from "./assertions.ts";
 * v.parse(FileExistsSpec, { kind: "file_exists", path: "out/report.md" });
 * ```
 */
export const FileExistsSpec = v.strictObject({ kind: v.literal("file_exists"), path: RelPath });
/** A `file_exists` spec. */
export type FileExistsSpec = v.InferOutput<typeof FileExistsSpec>;

/**
 * `{kind: "file_absent", path}`: passes when `path` is not a regular file in
 * the POST snapshot.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { FileAbsentSpec } from "./assertions.ts";
 * v.parse(FileAbsentSpec, { kind: "file_absent", path: "tmp/debug.log" });
 * ```
 */
export const FileAbsentSpec = v.strictObject({ kind: v.literal("file_absent"), path: RelPath });
/** A `file_absent` spec. */
export type FileAbsentSpec = v.InferOutput<typeof FileAbsentSpec>;

/**
 * `{kind: "file_contains", path, text, regex?}`: passes when the file
 * contains `text` (a substring, searched in a streamed way), or matches it as
 * a JavaScript regular expression when `regex` is true.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { FileContainsSpec } from "./assertions.ts";
 * v.parse(FileContainsSpec, { kind: "file_contains", path: "README.md", text: "^## Usage", regex: true });
 * ```
 */
export const FileContainsSpec = v.pipe(
  v.strictObject({
    kind: v.literal("file_contains"),
    path: RelPath,
    text: v.pipe(
      v.string(),
      v.minLength(1, "must not be empty"),
      v.description("Substring, or pattern when regex is true."),
    ),
    regex: v.optional(v.pipe(v.boolean(), v.description("Treat text as a regular expression. @default false"))),
  }),
  v.forward(
    v.check(
      (s) => !s.regex || validRegex(s.text) === null,
      (i) => `invalid regular expression: ${validRegex(String((i.input as { text: unknown }).text))}`,
    ),
    ["text"],
  ),
);
/** A `file_contains` spec. */
export type FileContainsSpec = v.InferOutput<typeof FileContainsSpec>;

/**
 * `{kind: "json_equals", path, pointer, value}`: passes when the JSON file's
 * value at `pointer` deep-equals `value` (object key order is irrelevant).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { JsonEqualsSpec } from "./assertions.ts";
 * v.parse(JsonEqualsSpec, { kind: "json_equals", path: "package.json", pointer: "/version", value: "1.2.0" });
 * ```
 */
export const JsonEqualsSpec = v.strictObject({
  kind: v.literal("json_equals"),
  path: RelPath,
  pointer: JsonPointer,
  value: v.pipe(v.unknown(), v.description("Expected JSON value.")),
});
/** A `json_equals` spec. */
export type JsonEqualsSpec = v.InferOutput<typeof JsonEqualsSpec>;

/**
 * `{kind: "only_modified", paths}`: passes when every added, deleted or
 * modified file is allowed by one of `paths`. An entry allows a path when it
 * is equal to it, names a directory containing it (`src` or `src/` allows
 * `src/a.ts`), or matches it as a glob (picomatch, dotfiles included:
 * `src/**`, `*.md`).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { OnlyModifiedSpec } from "./assertions.ts";
 * v.parse(OnlyModifiedSpec, { kind: "only_modified", paths: ["src/**", "CHANGELOG.md"] });
 * ```
 */
export const OnlyModifiedSpec = v.strictObject({
  kind: v.literal("only_modified"),
  paths: v.pipe(
    v.array(v.pipe(v.string(), v.minLength(1, "must not be empty"))),
    v.minLength(1, "must list at least one path or glob"),
    v.description("Paths, directories or globs that may change."),
  ),
});
/** An `only_modified` spec. */
export type OnlyModifiedSpec = v.InferOutput<typeof OnlyModifiedSpec>;

/**
 * `{kind: "no_modifications"}`: passes when no file was added, deleted or
 * modified.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { NoModificationsSpec } from "./assertions.ts";
 * v.parse(NoModificationsSpec, { kind: "no_modifications" });
 * ```
 */
export const NoModificationsSpec = v.strictObject({ kind: v.literal("no_modifications") });
/** A `no_modifications` spec. */
export type NoModificationsSpec = v.InferOutput<typeof NoModificationsSpec>;

/**
 * `{kind: "command_succeeds", command, timeout_ms?}`: runs `command` through
 * the shell with the workspace as working directory (stdin closed, output
 * discarded) and passes when it exits 0. On timeout its whole process group
 * is killed.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { CommandSucceedsSpec } from "./assertions.ts";
 * v.parse(CommandSucceedsSpec, { kind: "command_succeeds", command: "npm test", timeout_ms: 120000 });
 * ```
 */
export const CommandSucceedsSpec = v.strictObject({
  kind: v.literal("command_succeeds"),
  command: v.pipe(v.string(), v.minLength(1, "must not be empty"), v.description("Shell command.")),
  timeout_ms: v.optional(v.pipe(
    v.number(),
    v.integer("must be an integer"),
    v.minValue(1, "must be at least 1"),
    v.maxValue(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} (the longest a timer waits)`),
    v.description(`Kill the command after this many ms. @default ${DEFAULT_COMMAND_TIMEOUT_MS}`),
  )),
});
/** A `command_succeeds` spec. */
export type CommandSucceedsSpec = v.InferOutput<typeof CommandSucceedsSpec>;

/**
 * `{kind: "plugin", path, ...options}`: a `.ts`/`.js` module (path relative to
 * the base directory) whose named `evaluate` export, or default export,
 * is called with an {@link AssertionPluginContext} and returns (or resolves
 * to) `{passed, reason?, target?, name?}`. Extra fields are passed through
 * as `ctx.spec`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { PluginSpec } from "./assertions.ts";
 * v.parse(PluginSpec, { kind: "plugin", path: "checks/lint_clean.ts", max_warnings: 0 });
 * ```
 */
export const PluginSpec = v.looseObject({
  kind: v.literal("plugin"),
  path: v.pipe(v.string(), v.minLength(1, "must not be empty"), v.description("Plugin module file.")),
});
/** A plugin assertion spec. */
export type PluginSpec = v.InferOutput<typeof PluginSpec>;

/**
 * Any assertion spec (canonical form: `kind` key, no aliases).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { AssertionSpec } from "./assertions.ts";
 * v.parse(AssertionSpec, { kind: "no_modifications" });
 * ```
 */
export const AssertionSpec = v.variant("kind", [
  FileExistsSpec,
  FileAbsentSpec,
  FileContainsSpec,
  JsonEqualsSpec,
  OnlyModifiedSpec,
  NoModificationsSpec,
  CommandSucceedsSpec,
  PluginSpec,
]);
/** Any assertion spec. */
export type AssertionSpec = v.InferOutput<typeof AssertionSpec>;

/**
 * A verify list (the content of a `--verify-file` or a task file's `verify`).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { AssertionList } from "./assertions.ts";
 * v.parse(AssertionList, [{ kind: "file_exists", path: "out.txt" }]);
 * ```
 */
export const AssertionList = v.pipe(v.array(AssertionSpec), v.title("verify list"));

/** The assertion kinds. */
export const ASSERTION_KINDS = [
  "file_exists",
  "file_absent",
  "file_contains",
  "json_equals",
  "only_modified",
  "no_modifications",
  "command_succeeds",
  "plugin",
] as const;
/** An assertion kind. */
export type AssertionKind = (typeof ASSERTION_KINDS)[number];

const SCHEMA_OF: Record<AssertionKind, v.GenericSchema> = {
  file_exists: FileExistsSpec,
  file_absent: FileAbsentSpec,
  file_contains: FileContainsSpec,
  json_equals: JsonEqualsSpec,
  only_modified: OnlyModifiedSpec,
  no_modifications: NoModificationsSpec,
  command_succeeds: CommandSucceedsSpec,
  plugin: PluginSpec,
};

function validRegex(source: string): string | null {
  try {
    new RegExp(source);
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

/** Options of {@link parseAssertions}. */
export interface ParseOptions {
  /** Prefix of the field in errors, e.g. `verify` for a task file's `verify` list. @default {""} */
  field?: string;
  /** Directory plugin paths are resolved against; when given, a missing plugin file is a usage error. */
  baseDir?: string;
}

/**
 * Validates a verify list and returns canonical specs (aliases resolved,
 * `only_modified` paths normalized). An unknown kind or a malformed entry is
 * a usage error (exit code 2) naming the source, the entry index and the
 * field, e.g. `verify.jsonc: [2].path: required field is missing`.
 *
 * @throws {NoemaError} code `invalid_assertion`, exit code 2.
 *
 * @example
 * ```ts
 * import { parseAssertions } from "./assertions.ts";
 * const specs = parseAssertions([{ name: "FILE_EXISTS", target: "out.txt" }], "verify.jsonc");
 * // [{ kind: "file_exists", path: "out.txt" }]
 * ```
 */
export function parseAssertions(value: unknown, source: string, options: ParseOptions = {}): AssertionSpec[] {
  const prefix = options.field ?? "";
  const fail = (field: string, message: string): never => {
    throw new NoemaError("invalid_assertion", message, {
      file: source,
      field: field || undefined,
      exitCode: EXIT.USAGE,
    });
  };
  if (!Array.isArray(value)) return fail(prefix, `expected a list of assertions, got ${jsonType(value)}`);
  return value.map((entry, i) => parseEntry(entry, `${prefix}[${i}]`, fail, options.baseDir));
}

const ALIASES: Record<string, string> = { target: "path", content: "text" };

function parseEntry(
  entry: unknown,
  at: string,
  fail: (field: string, message: string) => never,
  baseDir: string | undefined,
): AssertionSpec {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    return fail(at, `expected an assertion object, got ${jsonType(entry)}`);
  }
  const raw = entry as Record<string, unknown>;
  const kindKeys = ["kind", "name", "type"].filter((k) => Object.hasOwn(raw, k));
  if (kindKeys.length === 0) {
    return fail(`${at}.kind`, `required field is missing (one of: ${ASSERTION_KINDS.join(", ")})`);
  }
  if (kindKeys.length > 1) return fail(`${at}.${kindKeys[1]}`, `give only one of ${kindKeys.join(", ")}`);
  const kindKey = kindKeys[0];
  const kindRaw = raw[kindKey];
  if (typeof kindRaw !== "string") return fail(`${at}.${kindKey}`, `expected string, got ${jsonType(kindRaw)}`);
  const kind = kindRaw.trim().toLowerCase() as AssertionKind;
  if (!ASSERTION_KINDS.includes(kind)) {
    return fail(
      `${at}.${kindKey}`,
      `unknown assertion kind ${JSON.stringify(kindRaw)} (${
        hintOf(didYouMean(kindRaw.trim(), ASSERTION_KINDS))
      }expected one of: ${ASSERTION_KINDS.join(", ")})`,
    );
  }
  const out: Record<string, unknown> = { kind };
  for (const [key, val] of Object.entries(raw)) {
    if (key === kindKey) continue;
    let canon = ownEntry(ALIASES, key) ?? key;
    if (kind === "only_modified" && (key === "target" || key === "paths")) canon = "paths";
    if (Object.hasOwn(out, canon)) return fail(`${at}.${key}`, `give only one of ${canon}, ${key}`);
    out[canon] = val;
  }
  if (kind === "only_modified" && typeof out.paths === "string") out.paths = [out.paths];
  const r = v.safeParse(SCHEMA_OF[kind], out);
  if (!r.success) {
    const issue = r.issues[0];
    const path = issue.path?.map((p) => p.key) ?? [];
    // Point at the key the user wrote (an alias) rather than its canonical name.
    const first = path.length > 0 ? String(path[0]) : "";
    const written = Object.keys(raw).find((k) => k !== kindKey && (ALIASES[k] ?? k) === first) ??
      (kind === "only_modified" && first === "paths"
        ? Object.keys(raw).find((k) => k === "target" || k === "paths")
        : undefined) ??
      first;
    const field = [at, written, ...path.slice(1).map((k) => (typeof k === "number" ? `[${k}]` : String(k)))]
      .filter((s) => s !== "").join(".").replace(/\.\[/g, "[");
    let message: string;
    const objectIssue = issue.kind === "schema" && /^(strict_|loose_)?object$/.test(issue.type);
    if (objectIssue && issue.expected === "never") {
      const allowed = Object.keys((SCHEMA_OF[kind] as unknown as { entries?: Record<string, unknown> }).entries ?? {});
      message = `unknown field (expected one of: ${allowed.join(", ")})`;
    } else if (objectIssue && issue.received === "undefined") {
      message = "required field is missing";
    } else if (issue.kind === "schema") {
      message = `expected ${issue.expected}, got ${jsonType(issue.input)}`;
    } else {
      message = issue.message;
    }
    return fail(field, message);
  }
  const spec = r.output as AssertionSpec;
  if (spec.kind === "only_modified") {
    spec.paths = [...new Set(spec.paths.map(normalizePattern))].sort(comparePaths);
  } else if ("path" in spec && spec.kind !== "plugin") {
    spec.path = normalizeRel(spec.path);
  }
  if (spec.kind === "plugin" && baseDir !== undefined && !existsSync(resolve(baseDir, spec.path))) {
    return fail(
      `${at}.${Object.keys(raw).find((k) => k === "path" || k === "target") ?? "path"}`,
      `plugin file not found: ${spec.path}`,
    );
  }
  return spec;
}

function normalizeRel(p: string): string {
  const n = posix.normalize(p.replace(/\\/g, "/"));
  return n.replace(/^\.\/+/, "").replace(/\/+$/, "");
}

function normalizePattern(p: string): string {
  const n = normalizeRel(p);
  return n === "" || n === "." ? "**" : n;
}

/** What assertions are evaluated against. */
export interface AssertionContext {
  /** The workspace directory; null when none was given. */
  workspace: string | null;
  /** Snapshot before the first action; null when unavailable. */
  pre: Snapshot | null;
  /** Snapshot after the last action; null when unavailable. */
  post: Snapshot | null;
  /** `diffSnapshots(pre, post)`; null when either is unavailable. */
  diff: WorkspaceDiff | null;
  /** Directory plugin paths are resolved against. @default {process.cwd()} */
  baseDir?: string;
}

/** What a plugin's `evaluate` receives. */
export interface AssertionPluginContext extends AssertionContext {
  /** The plugin's own spec entry, with any extra fields. */
  spec: PluginSpec;
}

/** What a plugin's `evaluate` returns. */
export interface AssertionPluginResult {
  passed: boolean;
  /** Why it failed (ignored when passed). */
  reason?: string | null;
  /** What it checked. @default {null} */
  target?: string | string[] | null;
  /** Result name. @default {"plugin:<file name>"} */
  name?: string;
}

/** An assertion plugin module. */
export interface AssertionPluginModule {
  evaluate?: (ctx: AssertionPluginContext) => AssertionPluginResult | Promise<AssertionPluginResult>;
  default?: unknown;
}

/**
 * Imports a plugin module and returns its `evaluate` function (named export,
 * else a default export that is a function or an object with `evaluate`).
 *
 * @throws {NoemaError} `invalid_plugin` (exit code 2) when the file cannot be
 *   imported or exports no evaluate function.
 *
 * @example
 * ```ts
 * import { loadAssertionPlugin } from "./assertions.ts";
 * const evaluate = await loadAssertionPlugin("checks/lint_clean.ts", process.cwd());
 * ```
 */
export async function loadAssertionPlugin(
  path: string,
  baseDir: string = process.cwd(),
): Promise<(ctx: AssertionPluginContext) => AssertionPluginResult | Promise<AssertionPluginResult>> {
  const abs = resolve(baseDir, path);
  if (!existsSync(abs)) {
    throw new NoemaError("invalid_plugin", `plugin file not found: ${path}`, { file: abs, exitCode: EXIT.USAGE });
  }
  let mod: AssertionPluginModule;
  try {
    mod = await import(nodeUrl().pathToFileURL(abs).href) as AssertionPluginModule;
  } catch (e) {
    const msg = e instanceof Error ? e.message.split("\n")[0] : String(e);
    throw new NoemaError("invalid_plugin", `cannot import plugin: ${msg}`, {
      file: abs,
      exitCode: EXIT.USAGE,
      cause: e,
    });
  }
  if (typeof mod.evaluate === "function") return mod.evaluate;
  const d = mod.default;
  if (typeof d === "function") return d as NonNullable<AssertionPluginModule["evaluate"]>;
  if (typeof d === "object" && d !== null && typeof (d as AssertionPluginModule).evaluate === "function") {
    const obj = d as Required<Pick<AssertionPluginModule, "evaluate">>;
    return (ctx) => obj.evaluate(ctx);
  }
  throw new NoemaError("invalid_plugin", "plugin exports no evaluate(ctx) function (named or default)", {
    file: abs,
    exitCode: EXIT.USAGE,
  });
}

/**
 * Imports every plugin of a verify list up front, so a broken plugin is a
 * usage error before the run rather than a failed assertion after it.
 *
 * @example
 * ```ts
 * import { loadAssertionPlugins, parseAssertions } from "./assertions.ts";
 * await loadAssertionPlugins(parseAssertions([{ kind: "plugin", path: "check.ts" }], "verify.jsonc"), ".");
 * ```
 */
export async function loadAssertionPlugins(
  specs: readonly AssertionSpec[],
  baseDir: string = process.cwd(),
): Promise<void> {
  for (const s of specs) if (s.kind === "plugin") await loadAssertionPlugin(s.path, baseDir);
}

const pass = (name: string, target: AssertionResult["target"]): AssertionResult => ({
  name,
  target,
  passed: true,
  reason: null,
});
const failed = (name: string, target: AssertionResult["target"], reason: string): AssertionResult => ({
  name,
  target,
  passed: false,
  reason,
});

/**
 * Evaluates assertions, in order, against the POST state of the workspace.
 * Never throws for a failing check: each problem becomes a failed result
 * with an actionable reason (`file_not_found: a/b.txt`, `unexpected_changes:
 * added=["x"]`, `command_failed: exit 2`, `snapshot_unavailable`, …). With no
 * post snapshot every built-in assertion fails with `snapshot_unavailable`;
 * `only_modified` and `no_modifications` also need the diff.
 *
 * `file_exists`, `file_absent` and the existence check of `file_contains` and
 * `json_equals` use the post snapshot's file map (so symlinks never count as
 * files); for a path under an ignored segment (not in any snapshot) they look
 * at the file system instead. `command_succeeds` runs after the post
 * snapshot, so what it writes does not show in the diff.
 *
 * @example
 * ```ts
 * import { captureSnapshot, diffSnapshots } from "./snapshot.ts";
 * import { evaluateAssertions, parseAssertions } from "./assertions.ts";
 * const specs = parseAssertions([{ kind: "file_exists", path: "out.txt" }], "verify.jsonc");
 * const pre = await captureSnapshot("ws");
 * // ... the agent acts ...
 * const post = await captureSnapshot("ws");
 * const results = await evaluateAssertions(specs, { workspace: "ws", pre, post, diff: diffSnapshots(pre, post) });
 * ```
 */
export async function evaluateAssertions(
  specs: readonly AssertionSpec[],
  ctx: AssertionContext,
): Promise<AssertionResult[]> {
  const out: AssertionResult[] = [];
  for (const spec of specs) out.push(await evaluateOne(spec, ctx));
  return out;
}

async function evaluateOne(spec: AssertionSpec, ctx: AssertionContext): Promise<AssertionResult> {
  const name = spec.kind;
  if (spec.kind === "plugin") return await evaluatePlugin(spec, ctx);
  const target: AssertionResult["target"] = spec.kind === "only_modified"
    ? [...spec.paths]
    : spec.kind === "no_modifications"
    ? null
    : spec.kind === "command_succeeds"
    ? spec.command
    : spec.path;
  const { post, workspace } = ctx;
  if (post === null || workspace === null) return failed(name, target, "snapshot_unavailable");
  switch (spec.kind) {
    case "file_exists":
      return fileExists(spec.path, post, workspace)
        ? pass(name, target)
        : failed(name, target, `file_not_found: ${spec.path}`);
    case "file_absent":
      return fileExists(spec.path, post, workspace)
        ? failed(name, target, `file_present: ${spec.path}`)
        : pass(name, target);
    case "file_contains": {
      if (!fileExists(spec.path, post, workspace)) return failed(name, target, `file_not_found: ${spec.path}`);
      const abs = resolve(workspace, spec.path);
      try {
        if (spec.regex) {
          const text = readCapped(abs);
          if (text === null) return failed(name, target, `file_too_large: ${spec.path} (over ${MAX_READ_BYTES} bytes)`);
          return new RegExp(spec.text).test(text)
            ? pass(name, target)
            : failed(name, target, `pattern_not_found: /${spec.text}/ in ${spec.path}`);
        }
        return fileIncludes(abs, spec.text)
          ? pass(name, target)
          : failed(name, target, `substring_not_found: ${JSON.stringify(spec.text)} in ${spec.path}`);
      } catch (e) {
        return failed(name, target, `file_read_error: ${spec.path} (${errCode(e)})`);
      }
    }
    case "json_equals": {
      if (!fileExists(spec.path, post, workspace)) return failed(name, target, `file_not_found: ${spec.path}`);
      let doc: unknown;
      try {
        const text = readCapped(resolve(workspace, spec.path));
        if (text === null) return failed(name, target, `file_too_large: ${spec.path} (over ${MAX_READ_BYTES} bytes)`);
        doc = JSON.parse(text);
      } catch (e) {
        return e instanceof SyntaxError
          ? failed(name, target, `invalid_json: ${spec.path}`)
          : failed(name, target, `file_read_error: ${spec.path} (${errCode(e)})`);
      }
      const found = resolvePointer(doc, spec.pointer);
      if (!found.ok) return failed(name, target, `json_pointer_not_found: ${spec.pointer}`);
      return jsonEqual(found.value, spec.value) ? pass(name, target) : failed(
        name,
        target,
        `json_mismatch: ${spec.pointer === "" ? "(root)" : spec.pointer} expected ${brief(spec.value)}, got ${
          brief(found.value)
        }`,
      );
    }
    case "only_modified": {
      if (ctx.diff === null) return failed(name, target, "snapshot_unavailable");
      const allowed = allowMatcher(spec.paths);
      const reason = changesReason(ctx.diff, (p) => !allowed(p));
      return reason === null ? pass(name, target) : failed(name, target, reason);
    }
    case "no_modifications": {
      if (ctx.diff === null) return failed(name, target, "snapshot_unavailable");
      const reason = changesReason(ctx.diff, () => true);
      return reason === null ? pass(name, target) : failed(name, target, reason);
    }
    case "command_succeeds": {
      const r = await runCommand(spec.command, workspace, spec.timeout_ms ?? DEFAULT_COMMAND_TIMEOUT_MS);
      return r === null ? pass(name, target) : failed(name, target, r);
    }
  }
}

/** A regular file at `rel` in the post state (snapshot map; file system for ignored paths). */
function fileExists(rel: string, post: Snapshot, workspace: string): boolean {
  if (Object.hasOwn(post.files, rel)) return true;
  if (!isIgnored(rel, post.policy)) return false;
  try {
    return lstatSync(resolve(workspace, rel)).isFile();
  } catch {
    return false;
  }
}

/** Whole-file read for regex and JSON, refusing files over {@link MAX_READ_BYTES}. */
function readCapped(abs: string): string | null {
  if (statSync(abs).size > MAX_READ_BYTES) return null;
  return readFileSync(abs, "utf8");
}

/** Streamed substring search over the file's bytes (UTF-8 of `text`), 1 MiB at a time. */
function fileIncludes(abs: string, text: string): boolean {
  const needle = Buffer.from(text, "utf8");
  const keep = needle.length - 1;
  const buf = Buffer.allocUnsafe(keep + (1 << 20));
  const fd = openSync(abs, "r");
  try {
    let have = 0;
    for (;;) {
      const n = readSync(fd, buf, have, buf.length - have, null);
      if (n <= 0) return false;
      have += n;
      if (buf.subarray(0, have).indexOf(needle) !== -1) return true;
      const tail = Math.min(keep, have);
      buf.copy(buf, 0, have - tail, have);
      have = tail;
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Resolves an RFC 6901 JSON pointer in a parsed JSON value.
 *
 * @example
 * ```ts
 * import { resolvePointer } from "./assertions.ts";
 * resolvePointer({ "a/b": [1, 2] }, "/a~1b/1"); // { ok: true, value: 2 }
 * resolvePointer({}, "/x"); // { ok: false }
 * ```
 */
export function resolvePointer(doc: unknown, pointer: string): { ok: true; value: unknown } | { ok: false } {
  if (pointer === "") return { ok: true, value: doc };
  let cur: unknown = doc;
  for (const raw of pointer.slice(1).split("/")) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) >= cur.length) return { ok: false };
      cur = cur[Number(token)];
    } else if (typeof cur === "object" && cur !== null) {
      if (!Object.hasOwn(cur, token)) return { ok: false };
      cur = (cur as Record<string, unknown>)[token];
    } else {
      return { ok: false };
    }
  }
  return { ok: true, value: cur };
}

/**
 * Deep equality of JSON values (object key order ignored).
 *
 * @example
 * ```ts
 * import { jsonEqual } from "./assertions.ts";
 * jsonEqual({ a: [1, { b: null }] }, { a: [1, { b: null }] }); // true
 * ```
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) =>
    Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])
  );
}

function brief(value: unknown): string {
  const s = JSON.stringify(value) ?? "undefined";
  return s.length > 80 ? s.slice(0, 77) + "..." : s;
}

function allowMatcher(patterns: readonly string[]): (path: string) => boolean {
  const glob = picomatch([...patterns], { dot: true });
  return (p) => glob(p) || patterns.some((a) => p === a || a === "**" || p.startsWith(a + "/"));
}

const LIST_CAP = 20;

function listText(paths: readonly string[]): string {
  const shown = paths.slice(0, LIST_CAP).map((p) => JSON.stringify(p));
  if (paths.length > LIST_CAP) shown.push(`…+${paths.length - LIST_CAP} more`);
  return `[${shown.join(", ")}]`;
}

/** `unexpected_changes: added=[…] deleted=[…] modified=[…]` over the changes `bad` selects; null when none. */
function changesReason(diff: WorkspaceDiff, bad: (path: string) => boolean): string | null {
  const parts: string[] = [];
  for (const key of ["added", "deleted", "modified"] as const) {
    const list = diff[key].filter(bad).sort(comparePaths);
    if (list.length > 0) parts.push(`${key}=${listText(list)}`);
  }
  return parts.length === 0 ? null : `unexpected_changes: ${parts.join(" ")}`;
}

/** Runs a shell command; null when it exits 0, else the failure reason. */
function runCommand(command: string, cwd: string, timeoutMs: number): Promise<string | null> {
  return new Promise((done) => {
    const posixGroup = process.platform !== "win32";
    let timedOut = false;
    let settled = false;
    const finish = (r: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      done(r);
    };
    let child: ReturnType<typeof spawn>;
    try {
      // noema's own secrets (the signing key) are not passed to the command.
      child = spawn(command, {
        cwd,
        env: childEnv(),
        shell: true,
        stdio: "ignore",
        detached: posixGroup,
        windowsHide: true,
      });
    } catch (e) {
      finish(`command_failed: ${errCode(e)}`);
      return;
    }
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (posixGroup && child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
        else child.kill("SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, timeoutMs);
    child.on("error", (e) => finish(`command_failed: ${errCode(e)}`));
    child.on("exit", (code, signal) => {
      if (timedOut) finish(`command_timed_out: ${timeoutMs}ms`);
      else if (code === 0) finish(null);
      else if (code !== null) finish(`command_failed: exit ${code}`);
      else finish(`command_failed: signal ${signal ?? "unknown"}`);
    });
  });
}

async function evaluatePlugin(spec: PluginSpec, ctx: AssertionContext): Promise<AssertionResult> {
  const base = spec.path.replace(/^.*[\\/]/, "").replace(/\.[^.]*$/, "");
  let name = `plugin:${base}`;
  try {
    const evaluate = await loadAssertionPlugin(spec.path, ctx.baseDir ?? process.cwd());
    const r = await evaluate({ ...ctx, spec }) as unknown;
    if (typeof r !== "object" || r === null || typeof (r as { passed?: unknown }).passed !== "boolean") {
      return failed(name, null, `plugin_error: ${spec.path}: evaluate must return {passed: boolean, reason?: string}`);
    }
    const res = r as AssertionPluginResult;
    if (typeof res.name === "string" && res.name !== "") name = res.name;
    const target = typeof res.target === "string" || (Array.isArray(res.target) && res.target.every((t) =>
        typeof t === "string"
      ))
      ? res.target
      : null;
    if (res.passed) return pass(name, target);
    return failed(name, target, typeof res.reason === "string" && res.reason !== "" ? res.reason : "plugin_failed");
  } catch (e) {
    const msg = e instanceof NoemaError ? e.detail : e instanceof Error ? e.message.split("\n")[0] : String(e);
    return failed(name, null, `plugin_error: ${spec.path}: ${msg}`);
  }
}
