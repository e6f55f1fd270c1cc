/**
 * Where run settings come from, and how they combine: the project config
 * `noema.jsonc` (defaults), the policy folder it names (`policies_dir`), a
 * JSONC task file, then explicit options (flags), each winning over the one
 * before. Relative paths are resolved against the file that names them.
 * `tags`, `adapter` and `policies` merge; `secrets` add up (every source's
 * names are masked). Rule sets (`rules`, `rules_file`) add up too, the
 * user's rules file (`~/.config/noema/rules.jsonc`) first: each can only
 * tighten the ones before it.
 *
 * A `policies/` folder in the current directory is NOT loaded on its own: a
 * cloned repository must not run code because it was `cd`-ed into. Loading a
 * folder takes `"policies_dir": "policies"` in `noema.jsonc`, and every
 * plugin file the project config brings in is named in `notices`.
 *
 * @module
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { EXIT, NoemaError } from "../errors.ts";
import { type AdapterSource, checkAdapterKeys } from "./adapter_keys.ts";
import { readSettingsFile } from "./jsonc.ts";
import { limits, refuseOversize } from "../store/limits.ts";
import type { RunOptions } from "./run.ts";
import { ProjectConfig, type StepSpec, TaskFile } from "./settings.ts";
import { mergeRuleLayers, settingsRuleLayers, userRuleLayers } from "./rules/load.ts";
import { ruleWarnings } from "./rules/warnings.ts";

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
  /**
   * What the caller should tell the user (the CLI prints each on stderr): every plugin file loaded because
   * `noema.jsonc` names it, and a `policies/` folder that is present but not loaded.
   */
  notices: string[];
  /**
   * Rules that load but are likely mistakes, each a line saying where (a tool name no agent uses: `Bsh(git push)`,
   * did you mean "Bash"?). The CLI prints each on stderr, at `run`, `rules` and each hook call.
   */
  warnings: string[];
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

type FileSettings = Omit<ProjectConfig, "$schema" | "policies_dir" | "store"> & {
  steps?: StepSpec[];
  episode_id?: string;
};

const PLUGIN_FILE = /\.[cm]?[jt]s$/;

/** The policy files of a folder: `*.ts` (and .js…), tests excluded, sorted. */
function folderPolicies(folder: string): string[] {
  return readdirSync(folder).filter((f) => PLUGIN_FILE.test(f) && !/\.test\.[cm]?[jt]s$/.test(f)).sort().map((f) =>
    join(folder, f)
  );
}

/** Notices for the plugin files a project config brings in (it may come from a cloned repository). */
function configNotices(options: RunOptions, cwd: string): string[] {
  const rel = (p: string) => relative(cwd, p) || p;
  const notes: string[] = [];
  for (const p of options.policies ?? []) if (typeof p === "string") notes.push(`noema.jsonc loads policy ${rel(p)}`);
  if (typeof options.planner === "string") notes.push(`noema.jsonc loads planner ${rel(options.planner)}`);
  if (typeof options.using === "string" && PLUGIN_FILE.test(options.using)) {
    notes.push(`noema.jsonc loads adapter ${rel(options.using)}`);
  }
  return notes;
}

function toOptions(s: FileSettings, base: string, source: string): RunOptions {
  const o: RunOptions = {};
  const { policies, workspace, adapter, using, verify, planner, rules, rules_file, ...rest } = s;
  Object.assign(o, rest);
  const layers = settingsRuleLayers({ rules, rules_file }, source);
  if (layers.length > 0) o.rules = layers;
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
    if (k === "rules") {
      out.rules = mergeRuleLayers(lower.rules ?? [], v as NonNullable<RunOptions["rules"]>);
      continue;
    }
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
  const notices: string[] = [];
  const adapters: AdapterSource[] = [];
  const userRules = userRuleLayers();
  let merged: RunOptions = { base_dir: cwd, ...(userRules.length > 0 ? { rules: userRules } : {}) };
  const configPath = join(cwd, PROJECT_CONFIG);
  let policiesDir: string | undefined;
  if (existsSync(configPath)) {
    const { policies_dir, store: _store, ...config } = readSettingsFile(configPath, ProjectConfig);
    policiesDir = policies_dir;
    const fromConfig = toOptions(config, cwd, configPath);
    if (policiesDir !== undefined) {
      const folder = resolve(cwd, policiesDir);
      if (!existsSync(folder) || !statSync(folder).isDirectory()) {
        throw new NoemaError("bad_config", `policies_dir: folder not found: ${policiesDir}`, {
          file: configPath,
          field: "policies_dir",
          exitCode: EXIT.USAGE,
        });
      }
      fromConfig.policies = [...(fromConfig.policies ?? []), ...folderPolicies(folder)];
    }
    notices.push(...configNotices(fromConfig, cwd));
    if (config.adapter) adapters.push({ path: configPath, adapter: config.adapter });
    merged = mergeOptions(merged, fromConfig);
    sources.push(configPath);
  }
  const folder = join(cwd, "policies");
  if (policiesDir === undefined && existsSync(folder) && statSync(folder).isDirectory()) {
    const n = folderPolicies(folder).length;
    if (n > 0) {
      notices.push(
        `not loading ${n} file${n === 1 ? "" : "s"} in ./policies/: a policy folder is loaded only when ` +
          `noema.jsonc says so ("policies_dir": "policies")`,
      );
    }
  }
  let task = input.taskOrFile;
  if (isTaskFileArg(input.taskOrFile)) {
    const path = resolve(input.taskOrFile);
    const file = readSettingsFile(path, TaskFile);
    const { task: fileTask, $schema: _schema, ...rest } = file;
    task = fileTask;
    // Over the limit, the task file is named (prepareEpisode's check would say only "the task of N bytes").
    try {
      refuseOversize("the task", fileTask, limits().taskBytes, 'see README "Limits"');
    } catch (e) {
      if (!(e instanceof NoemaError)) throw e;
      throw new NoemaError(e.code, e.detail, { file: path, field: "task", exitCode: EXIT.USAGE });
    }
    if (rest.adapter) adapters.push({ path, adapter: rest.adapter });
    merged = mergeOptions(merged, toOptions(rest, dirname(path), path));
    sources.push(path);
  }
  merged = mergeOptions(merged, input.options ?? {});
  checkAdapterKeys(typeof merged.using === "string" ? merged.using : undefined, adapters);
  return { task, options: merged, sources, notices, warnings: ruleWarnings(merged.rules ?? []) };
}
