/**
 * Loading policy and adapter plugins from `.ts` files at run time, with
 * one-line errors naming the file and what is wrong.
 *
 * @module
 */
import { existsSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, relative, resolve } from "node:path";
import { nodeUrl } from "../builtins.ts";
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import { sha256File } from "../store/hash.ts";
import {
  type AdapterPlugin,
  DirectedIntuition,
  PLUGIN_API_VERSION,
  type PolicyObject,
  type PolicyState,
  type ReviewState,
  type Verdict,
} from "./api.ts";
import { captureOutput } from "./plugin_output.ts";
import { throwSite } from "./thrown.ts";
import { missingExportSite } from "./missing_export.ts";
import type { Planner } from "../runtime/planner.ts";
import { jsonType } from "../json.ts";

/** A policy ready to be consulted. */
export interface LoadedPolicy {
  /** `<Name>@<version>`. */
  id: string;
  /** Name (class name or `name`). */
  name: string;
  /** Version. */
  version: string;
  /** Absolute path of its file, or null for policies given as objects. */
  path: string | null;
  /** `sha256:` of the file, or null. */
  sha256: string | null;
  /** Calls the policy. */
  advise(state: PolicyState): unknown;
  /** Calls the policy's `review`, when it has one (see `src/runtime/review.ts`). */
  review?(state: ReviewState): unknown;
  /**
   * Where `advise` runs: `thread` (in the caller's thread; policies given as
   * objects or classes, and files under `NOEMA_POLICY_ISOLATION=thread`) or
   * `worker` (policy files, by default: a worker thread that is terminated
   * when a call times out). Absent means `thread`.
   */
  isolation?: "thread" | "worker";
  /**
   * Applies a `redact` verdict's patterns to a result where the policy runs (worker policies: in the worker, so
   * the policy timeout and memory cap bound them; see `src/runtime/review_mask.ts`). Absent: in the caller's thread.
   */
  mask?(value: unknown, patterns: readonly string[]): Promise<unknown>;
  /** Stops a call that timed out (worker policies: terminates the worker; the next call restarts it). */
  abort?(): void;
  /**
   * Makes the policy ready to be called, before the call's own timeout starts: worker policies restart a worker
   * that a timeout stopped and wait for the policy to load again there (bounded by the load timeout,
   * `NOEMA_POLICY_LOAD_TIMEOUT_MS`). Rejects when the reload does not finish in time.
   */
  prepare?(): Promise<void>;
  /** Releases the policy (worker policies: the worker, when no other policy uses it). */
  close?(): void;
}

/** Loads one adapter plugin (a built-in, on first use). */
export type AdapterLoader = () => Promise<AdapterPlugin>;

/**
 * Adapters by name, each loaded on first use: the built-ins that a `using`
 * name selects. The runtime knows none itself; the composition root
 * (`src/drivers.ts`) passes `BUILTIN_ADAPTERS`.
 */
export type AdapterRegistry = Readonly<Record<string, AdapterLoader>>;

/** An adapter ready to be created. */
export interface LoadedAdapter {
  /** The plugin. */
  plugin: AdapterPlugin;
  /** Label used as `episode.using` and in `adapter` fields. */
  label: string;
  /** Absolute path, or null for built-ins. */
  path: string | null;
  /** `sha256:` of the file, or null. */
  sha256: string | null;
}

let bunModuleRegistration: Promise<void> | null = null;

/**
 * Makes the bare specifier `noema` resolve to the plugin API for plugin files
 * anywhere on disk. Under Bun (source and compiled binary) this registers a
 * virtual module; under Deno the `deno.json` import map does the same.
 * Concurrent callers share one registration and all wait for it.
 */
export function registerPluginApi(): Promise<void> {
  const bun = (globalThis as { Bun?: { plugin(p: unknown): void } }).Bun;
  if (!bun) return Promise.resolve();
  type Loaded = { exports: Record<string, unknown>; loader: "object" };
  return bunModuleRegistration ??= (() => {
    bun.plugin({
      name: "noema-plugin-api",
      setup(build: { module(name: string, cb: () => Promise<Loaded>): void }) {
        // Evaluated when a plugin first imports "noema", not before: a plugin that imports nothing
        // (most policies) does not pay for loading the whole public API.
        build.module("noema", async () => ({ exports: { ...await import("../public_api.ts") }, loader: "object" }));
      },
    });
    return Promise.resolve();
  })();
}

function pluginError(file: string, message: string, cause?: unknown): NoemaError {
  return new NoemaError("bad_plugin", message, { file, exitCode: EXIT.USAGE, cause });
}

function checkApi(file: string, declared: unknown): void {
  if (declared === undefined) return;
  const major = String(declared).split(".")[0];
  const ours = PLUGIN_API_VERSION.split(".")[0];
  if (major !== ours) {
    throw pluginError(
      file,
      `written for plugin API ${String(declared)}, but this noema provides ${PLUGIN_API_VERSION}`,
    );
  }
}

/**
 * Imports a plugin `.ts` file with the loader's rules (the bare `noema`
 * module registered; a missing file or a syntax error is a one-line usage
 * error naming the file). Used for user tool files.
 *
 * @example
 * ```ts
 * import { importPluginFile } from "noema";
 * const mod = await importPluginFile("./tools/word_count.ts");
 * ```
 */
export async function importPluginFile(path: string): Promise<Record<string, unknown>> {
  return await importFile(path);
}

async function importFile(path: string): Promise<Record<string, unknown>> {
  const abs = resolve(path);
  if (!existsSync(abs) || !statSync(abs).isFile()) throw pluginError(path, "plugin file not found");
  await registerPluginApi();
  const ms = pluginLoadTimeoutMs();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    // A file whose top-level await never settles would otherwise leave nothing to wait for: bounded here.
    // (A synchronous endless loop at load cannot be cut in this thread; policy files load in a worker.)
    return await Promise.race([
      import(nodeUrl().pathToFileURL(abs).href) as Promise<Record<string, unknown>>,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(pluginError(path, `did not finish loading within ${ms} ms (NOEMA_POLICY_LOAD_TIMEOUT_MS)`)),
          ms,
        );
      }),
    ]);
  } catch (e) {
    if (e instanceof NoemaError) throw e;
    throw pluginError(path, loadFailure(e, abs), e);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How long loading a plugin file may take, milliseconds (`NOEMA_POLICY_LOAD_TIMEOUT_MS`, default 30000); past
 * it, loading fails with exit 2 naming the file.
 *
 * @example
 * ```ts
 * import { pluginLoadTimeoutMs } from "noema";
 * pluginLoadTimeoutMs(); // 30000 unless NOEMA_POLICY_LOAD_TIMEOUT_MS says otherwise
 * ```
 */
export function pluginLoadTimeoutMs(): number {
  const n = Number(process.env.NOEMA_POLICY_LOAD_TIMEOUT_MS);
  return Number.isFinite(n) && n > 0 ? n : 30_000;
}

/**
 * What went wrong importing a plugin file, in one line. Syntax errors say
 * where: Bun throws a `BuildMessage` with a `position` (several of them in an
 * `AggregateError`: the first is shown, with the count of the others), Deno a
 * `SyntaxError` whose message ends in `at file:///…:LINE:COL`. Anything else the file threw while it loaded says
 * where in `file` (its absolute path) when its stack does: `cannot load: no config (at throws.ts:3:7)`.
 */
function loadFailure(e: unknown, file: string): string {
  // Bun reports several syntax errors as an AggregateError ("N errors building …") of BuildMessages: show the first.
  const errors = (e as { errors?: unknown } | null)?.errors;
  if (Array.isArray(errors) && errors.length > 0) {
    const first = loadFailure(errors[0], file);
    return errors.length > 1 ? `${first} (and ${errors.length - 1} more error${errors.length > 2 ? "s" : ""})` : first;
  }
  const err = e as { name?: unknown; message?: unknown; position?: { line?: unknown; column?: unknown } | null } | null;
  const text = typeof err?.message === "string" ? err.message : String(e);
  const first = text.split("\n")[0].replace(/^(TypeError: )?SyntaxError: /, "").trim();
  const isBuild = err?.constructor?.name === "BuildMessage" || err?.name === "BuildMessage";
  if (isBuild && typeof err?.position?.line === "number") {
    return `syntax error at line ${err.position.line}, column ${String(err.position.column)}: ${first}`;
  }
  if (/SyntaxError/.test(text)) {
    const at = /:(\d+):(\d+)\s*$/m.exec(text.split("\n").filter((l) => /^\s*at /.test(l)).at(-1) ?? "");
    return at ? `syntax error at line ${at[1]}, column ${at[2]}: ${first}` : `syntax error: ${first}`;
  }
  if (isBuild) return `syntax error: ${first}`;
  if ((err as { code?: unknown } | null)?.code === "ERR_UNKNOWN_FILE_EXTENSION") {
    // Plain Node (the library's dist/node build) cannot import TypeScript.
    return `cannot load: ${first} (Node cannot import .ts files: run under Bun or Deno, use a .js/.mjs plugin, ` +
      "or pass the plugin as an object)";
  }
  let stack: unknown;
  try {
    stack = (e as { stack?: unknown } | null)?.stack;
  } catch {
    stack = undefined;
  }
  const at = (typeof stack === "string" ? throwSite(stack, file) ?? importedSite(stack, file) : null) ??
    missingExportSite(text, file);
  // Deno's message may say where already (`… at file:///p/x.ts:1:10`).
  const said = text.includes(file) || text.includes(nodeUrl().pathToFileURL(file).href);
  return `cannot load: ${first}${at && !said ? ` (at ${at})` : ""}`;
}

/**
 * Where a module the plugin imports threw while it loaded (the plugin's own file is in no frame then): the first
 * stack frame in a file on disk and not in noema's own `src/` (the loader's frames), relative to the plugin's
 * directory when under it (`lib/config.ts:2:7`).
 */
function importedSite(stack: string, file: string): string | null {
  const dir = dirname(file);
  const own = dirname(dirname(nodeUrl().fileURLToPath(import.meta.url))) + "/";
  for (const line of stack.split("\n").slice(1, 64)) {
    const m = /(?:\(|at )(file:\/\/)?(\/[^()]*?):(\d+):(\d+)\)?\s*$/.exec(line);
    if (!m || m[2].startsWith("/$bunfs/") || m[2].startsWith(own)) continue;
    let path = m[2];
    if (m[1]) {
      try {
        path = decodeURIComponent(path);
      } catch {
        // not URL-encoded after all: as it is
      }
    }
    const rel = relative(dir, path);
    return `${rel.startsWith("..") || isAbsolute(rel) ? path : rel}:${m[3]}:${m[4]}`;
  }
  return null;
}

/**
 * Turns a policy value (class, instance or object) into a {@link LoadedPolicy}.
 *
 * @example
 * ```ts
 * import { toLoadedPolicy } from "noema";
 * const p = toLoadedPolicy({ name: "Quiet", version: "1.0", advise: () => undefined }, "inline");
 * p.id; // "Quiet@1.0"
 * ```
 */
export function toLoadedPolicy(
  value: unknown,
  file: string,
  path: string | null = null,
  sha256: string | null = null,
): LoadedPolicy {
  // A class extending DirectedIntuition (or any class with advise on its prototype).
  if (
    typeof value === "function" &&
    (typeof (value as { prototype?: { advise?: unknown } }).prototype?.advise === "function" ||
      typeof (value as { prototype?: { review?: unknown } }).prototype?.review === "function")
  ) {
    const cls = value as unknown as { new (): DirectedIntuition; name: string; version?: unknown; api?: unknown };
    checkApi(file, cls.api);
    let instance: DirectedIntuition;
    try {
      instance = new cls();
    } catch (e) {
      throw pluginError(
        file,
        `the policy class ${cls.name} cannot be constructed without arguments: ${(e as Error).message}`,
      );
    }
    const version = cls.version === undefined ? "unspecified" : String(cls.version);
    return withMethods({ id: `${cls.name}@${version}`, name: cls.name, version, path, sha256 }, instance);
  }
  if (value instanceof DirectedIntuition) {
    const ctor = value.constructor as { name: string; version?: unknown; api?: unknown };
    checkApi(file, ctor.api);
    const version = ctor.version === undefined ? "unspecified" : String(ctor.version);
    return withMethods({ id: `${ctor.name}@${version}`, name: ctor.name, version, path, sha256 }, value);
  }
  if (
    typeof value === "object" && value !== null &&
    (typeof (value as PolicyObject).advise === "function" || typeof (value as PolicyObject).review === "function")
  ) {
    const obj = value as PolicyObject;
    if (typeof obj.name !== "string" || obj.name === "") {
      throw pluginError(file, 'a policy object needs a "name" (string)');
    }
    checkApi(file, obj.api);
    const version = obj.version === undefined ? "unspecified" : String(obj.version);
    return withMethods({ id: `${obj.name}@${version}`, name: obj.name, version, path, sha256 }, obj);
  }
  throw pluginError(
    file,
    "does not export a policy: the default export must be a class extending DirectedIntuition or an object { name, version, advise(state) } (or review(state))",
  );
}

/** A loaded policy calling `target`'s `advise` (nothing when it has none) and `review` (when it has one). */
function withMethods(
  base: Omit<LoadedPolicy, "advise" | "review">,
  target: { advise?: (s: PolicyState) => unknown; review?: (s: ReviewState) => unknown },
): LoadedPolicy {
  const policy: LoadedPolicy = {
    ...base,
    advise: (s) => typeof target.advise === "function" ? target.advise(s) : undefined,
  };
  if (typeof target.review === "function") policy.review = (s) => target.review!(s);
  return policy;
}

/** Set by {@link policyFilesInWorkers}. */
let workersOnly = false;

/**
 * From now on, policy files are consulted in a worker thread whatever
 * `NOEMA_POLICY_ISOLATION` says, and a file whose worker cannot start is
 * refused: for `noema hook`, where a call looping for ever in the hook's own
 * thread could not be stopped (no timer fires), and the agent would take the
 * hung hook as "go ahead". A worker's call is stopped at the policy timeout
 * (`Worker.terminate`) and fails closed.
 *
 * @example
 * ```ts
 * import { policyFilesInWorkers } from "./loader.ts";
 * policyFilesInWorkers();
 * ```
 */
export function policyFilesInWorkers(): void {
  workersOnly = true;
}

/**
 * Loads a policy from a `.ts` (or `.js`) file's default export. By default
 * the file is loaded and consulted in a worker thread (`isolation: "worker"`),
 * so a call that loops forever can be stopped at the policy timeout;
 * `NOEMA_POLICY_ISOLATION=thread` loads it in the current thread instead
 * (not after {@link policyFilesInWorkers}: `noema hook`).
 *
 * @example
 * ```ts
 * import { loadPolicyFile } from "noema";
 * const policy = await loadPolicyFile("plugins/policies/sql-guard.ts");
 * console.log(policy.id); // "SqlGuard@1.0"
 * ```
 */
export async function loadPolicyFile(path: string): Promise<LoadedPolicy> {
  const mode = process.env.NOEMA_POLICY_ISOLATION === "thread" && !workersOnly ? "thread" : "worker";
  if (mode === "worker") {
    const abs = resolve(path);
    if (!existsSync(abs) || !statSync(abs).isFile()) throw pluginError(path, "plugin file not found");
    const { loadPolicyInWorker } = await import("../runtime/policy_host.ts");
    const policy = await loadPolicyInWorker(path, sha256File(abs).sha256);
    if (policy) return policy;
    if (workersOnly) throw pluginError(path, "cannot be consulted: the policy worker cannot start");
    // The worker could not start (e.g. a build without the worker entry): load in this thread.
  }
  // In this thread, what the file prints while it loads goes to stderr too (in a worker, the worker routes it).
  const endOutput = captureOutput(`policy ${basename(path)}`);
  try {
    return await loadPolicyInThread(path);
  } finally {
    endOutput();
  }
}

/**
 * Loads a policy file in the current thread (what a policy worker does, and
 * what `loadPolicyFile` does under `NOEMA_POLICY_ISOLATION=thread`).
 *
 * @example
 * ```ts
 * import { loadPolicyInThread } from "./loader.ts";
 * const policy = await loadPolicyInThread("plugins/policies/sql-guard.ts");
 * policy.isolation; // "thread"
 * ```
 */
export async function loadPolicyInThread(path: string): Promise<LoadedPolicy> {
  const mod = await importFile(path);
  const value = mod.default ?? mod.policy;
  if (value === undefined) {
    throw pluginError(path, "has no default export (export default your policy class or object)");
  }
  return toLoadedPolicy(value, path, resolve(path), sha256File(resolve(path)).sha256);
}

function checkAdapter(value: unknown, file: string): AdapterPlugin {
  const a = value as AdapterPlugin;
  if (typeof a !== "object" || a === null || typeof a.create !== "function" || typeof a.name !== "string") {
    throw pluginError(file, "does not export an adapter: the default export must be { name, create(context) }");
  }
  checkApi(file, a.api);
  return a;
}

/** Whether an adapter reference is a file path rather than a name. */
export function isAdapterPath(ref: string): boolean {
  return /[\\/]|\.[cm]?[jt]s$/.test(ref);
}

/**
 * Finds an adapter: a name in `builtins` (the composition root's
 * `BUILTIN_ADAPTERS`: `minimal`, `shell`, `command`, `scripted`, `llm`) or a
 * path to a `.ts` file. The public `loadAdapter` of `noema` passes the
 * built-ins. An unknown name is a usage error listing the known ones.
 *
 * @example
 * ```ts
 * import { loadAdapterFrom } from "./loader.ts";
 * const { plugin } = await loadAdapterFrom("./my_adapter.ts", {});
 * ```
 */
export async function loadAdapterFrom(ref: string, builtins: AdapterRegistry = {}): Promise<LoadedAdapter> {
  if (Object.hasOwn(builtins, ref)) {
    const builtin = await builtins[ref]();
    return { plugin: builtin, label: builtin.name, path: null, sha256: null };
  }
  if (!isAdapterPath(ref)) {
    const names = Object.keys(builtins);
    const choices = names.length > 0 ? `one of ${names.join(", ")} or a path to a .ts file` : "a path to a .ts file";
    throw new NoemaError("unknown_adapter", `unknown adapter ${JSON.stringify(ref)}: use ${choices}`, {
      exitCode: EXIT.USAGE,
    });
  }
  const mod = await importFile(ref);
  const plugin = checkAdapter(mod.default ?? mod.adapter, ref);
  return { plugin, label: plugin.name, path: resolve(ref), sha256: sha256File(resolve(ref)).sha256 };
}

/**
 * Checks what a policy returned: nothing, or a well-formed {@link Verdict}.
 * Returns the problem in words, or null when it is acceptable.
 *
 * @example
 * ```ts
 * import { verdictProblem } from "noema";
 * verdictProblem({ kind: "veto" }); // 'advice: must be a string'
 * ```
 */
export function verdictProblem(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) {
    return `expected a verdict object or nothing, got ${jsonType(value)}`;
  }
  const v = value as Verdict;
  if (v.kind !== "hint" && v.kind !== "intervention" && v.kind !== "veto") {
    return `kind: must be "hint", "intervention" or "veto", got ${JSON.stringify(v.kind)}`;
  }
  if (typeof v.advice !== "string") return "advice: must be a string";
  if (v.confidence !== undefined && (typeof v.confidence !== "number" || !(v.confidence >= 0 && v.confidence <= 1))) {
    return "confidence: must be a number from 0 to 1";
  }
  if (v.kind === "intervention" && (typeof v.patch !== "object" || v.patch === null || Array.isArray(v.patch))) {
    return "patch: an intervention needs a patch object";
  }
  if (v.risk_tags !== undefined && !(Array.isArray(v.risk_tags) && v.risk_tags.every((t) => typeof t === "string"))) {
    return "risk_tags: must be a list of strings";
  }
  if (v.audit !== undefined && typeof v.audit !== "boolean") return "audit: must be true or false";
  return null;
}

/** A planner ready to plan. */
export interface LoadedPlanner {
  /** The planner. */
  planner: Planner;
  /** Absolute path, or null for built-ins and objects. */
  path: string | null;
  /** `sha256:` of the file, or null. */
  sha256: string | null;
}

/**
 * Loads a planner plugin from a `.ts` file: its default export is
 * `{ name, plan({ task, steps }) → { source?, steps, rationale? } }`.
 *
 * @example
 * ```ts
 * import { loadPlannerFile } from "noema";
 * const { planner } = await loadPlannerFile("plugins/planners/checklist.ts");
 * ```
 */
export async function loadPlannerFile(path: string): Promise<LoadedPlanner> {
  const mod = await importFile(path);
  const value = (mod.default ?? mod.planner) as Planner | undefined;
  if (
    typeof value !== "object" || value === null || typeof value.plan !== "function" || typeof value.name !== "string"
  ) {
    throw pluginError(path, "does not export a planner: the default export must be { name, plan({ task, steps }) }");
  }
  checkApi(path, (value as { api?: unknown }).api);
  return { planner: value, path: resolve(path), sha256: sha256File(resolve(path)).sha256 };
}
