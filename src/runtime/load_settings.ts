/**
 * Where run settings come from, and how they combine: the project config
 * `noema.jsonc` (defaults), a `policies/` folder, a JSONC task file, then
 * explicit options (flags), each winning over the one before. Relative paths
 * are resolved against the file that names them. `tags`, `adapter` and
 * `policies` merge; `secrets` add up (every source's names are masked).
 *
 * @module
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { readSettingsFile } from "./jsonc.ts";
import type { RunOptions } from "./run.ts";
import { ProjectConfig, type StepSpec, TaskFile } from "./settings.ts";

/** The name of the project config file. */
export const PROJECT_CONFIG = "noema.jsonc";

/** Settings resolved for one run. */
export interface ResolvedRun {
  /** The task. */
  task: string;
  /** Options for `run()`. */
  options: RunOptions;
  /** Files the settings came from, in order of precedence (lowest first). */
  sources: string[];
}

/**
 * Whether a `noema run` argument names a task file rather than a task.
 *
 * @example
 * ```ts
 * import { isTaskFileArg } from "noema";
 * isTaskFileArg("examples/safe-shell.jsonc"); // true when the file exists
 * ```
 */
export function isTaskFileArg(arg: string): boolean {
  return /\.jsonc?$/i.test(arg) && existsSync(arg) && statSync(arg).isFile();
}

function resolvePaths(base: string, list: readonly string[] | undefined): string[] | undefined {
  return list?.map((p) => (isAbsolute(p) ? p : resolve(base, p)));
}

type FileSettings = Omit<ProjectConfig, "$schema"> & { steps?: StepSpec[]; episode_id?: string };

function toOptions(s: FileSettings, base: string, source: string): RunOptions {
  const o: RunOptions = {};
  const { policies, workspace, adapter, using, verify, planner, ...rest } = s;
  Object.assign(o, rest);
  if (planner !== undefined) o.planner = isAbsolute(planner) ? planner : resolve(base, planner);
  if ("root" in s && typeof s.root === "string") o.root = isAbsolute(s.root) ? s.root : resolve(base, s.root);
  if (policies) o.policies = resolvePaths(base, policies);
  if (workspace !== undefined) o.workspace = isAbsolute(workspace) ? workspace : resolve(base, workspace);
  if (adapter) o.adapter = { ...adapter };
  const adapterName = typeof adapter?.name === "string" ? adapter.name : undefined;
  const u = using ?? adapterName;
  if (u !== undefined) o.using = /[\\/]|\.[cm]?[jt]s$/.test(u) && !isAbsolute(u) ? resolve(base, u) : u;
  if (verify) {
    o.verify = verify;
    o.verify_source = source;
    o.verify_field = "verify";
  }
  o.base_dir = base;
  return o;
}

function mergeOptions(lower: RunOptions, higher: RunOptions): RunOptions {
  const out: RunOptions = { ...lower };
  for (const [k, v] of Object.entries(higher)) {
    if (v === undefined) continue;
    if (k === "policies") continue;
    if (k === "tags") out.tags = { ...(lower.tags ?? {}), ...(v as Record<string, string>) };
    // Secret names add up: a flag never unmasks what the task file or noema.jsonc names.
    else if (k === "secrets") out.secrets = [...new Set([...(lower.secrets ?? []), ...(v as string[])])];
    else if (k === "adapter") out.adapter = { ...(lower.adapter ?? {}), ...(v as Record<string, unknown>) };
    else (out as Record<string, unknown>)[k] = v;
  }
  const policies = [...(lower.policies ?? []), ...(higher.policies ?? [])];
  const seen = new Set<unknown>();
  out.policies = policies.filter((p) => {
    const key = typeof p === "string" ? resolve(p) : p;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return out;
}

/**
 * Resolves the settings of one run from the project config in `cwd`, its
 * `policies/` folder, an optional task file, and explicit options.
 *
 * @example
 * ```ts
 * import { resolveRunSettings } from "noema";
 * const { task, options } = resolveRunSettings({ taskOrFile: "examples/safe-shell.jsonc" });
 * ```
 */
export function resolveRunSettings(input: { taskOrFile: string; options?: RunOptions; cwd?: string }): ResolvedRun {
  const cwd = resolve(input.cwd ?? ".");
  const sources: string[] = [];
  let merged: RunOptions = { base_dir: cwd };
  const configPath = join(cwd, PROJECT_CONFIG);
  if (existsSync(configPath)) {
    merged = mergeOptions(merged, toOptions(readSettingsFile(configPath, ProjectConfig), cwd, configPath));
    sources.push(configPath);
  }
  const folder = join(cwd, "policies");
  if (existsSync(folder) && statSync(folder).isDirectory()) {
    const files = readdirSync(folder).filter((f) => /\.[cm]?[jt]s$/.test(f) && !/\.test\.[cm]?[jt]s$/.test(f)).sort();
    if (files.length > 0) {
      merged = mergeOptions(merged, { policies: files.map((f) => join(folder, f)) });
      sources.push(folder);
    }
  }
  let task = input.taskOrFile;
  if (isTaskFileArg(input.taskOrFile)) {
    const path = resolve(input.taskOrFile);
    const file = readSettingsFile(path, TaskFile);
    const { task: fileTask, $schema: _schema, ...rest } = file;
    task = fileTask;
    merged = mergeOptions(merged, toOptions(rest, dirname(path), path));
    sources.push(path);
  }
  merged = mergeOptions(merged, input.options ?? {});
  return { task, options: merged, sources };
}
