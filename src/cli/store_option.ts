/**
 * The shared store a command uses: the global `--store URL`, else
 * `NOEMA_STORE`, else `store` in `./noema.jsonc`; null means local files only.
 * And the project it sees: the global `--project NAME`, else `NOEMA_PROJECT`,
 * else `project` in `./noema.jsonc` (none: every project), unless
 * `--all-projects`.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import process from "node:process";
import type { SharedStore } from "../shared_store/shared_store.ts";
import { projectNameProblem } from "../shared_store/project.ts";
import { resolveStoreUrl } from "../shared_store/store_url.ts";
import { usageError } from "./errors.ts";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { PROJECT_CONFIG } from "../runtime/load_settings.ts";
import { ProjectConfig } from "../runtime/settings.ts";
import { parseJsoncFile, readSettingsFile } from "../runtime/jsonc.ts";

/**
 * The `project` of `./noema.jsonc`, read alone: the other fields are left to the commands that use them, so a bad
 * rule there does not fail a command that reads no rules (`install-hooks --user`). Its name is checked by the caller.
 */
function configProject(): string | undefined {
  const config = parseJsoncFile(resolve(PROJECT_CONFIG));
  const project = config !== null && typeof config === "object" ? (config as { project?: unknown }).project : undefined;
  if (project === undefined || typeof project === "string") return project;
  throw usageError(`${PROJECT_CONFIG}: project: expected a string`);
}

/**
 * The store URL in force for a command, or null.
 *
 * @example
 * ```ts
 * // inside an action: const url = storeUrlOf(cmd);
 * ```
 */
export function storeUrlOf(cmd: CommandUnknownOpts): { url: string; from: string } | null {
  const all = cmd.optsWithGlobals() as Record<string, unknown>;
  return resolveStoreUrl(typeof all.store === "string" ? all.store : undefined, projectStore());
}

/**
 * The store in force without a command line (a hook process): `NOEMA_STORE`,
 * else `store` in `./noema.jsonc`; null for none.
 *
 * @example
 * ```ts
 * import { storeFromEnvironment } from "./store_option.ts";
 * storeFromEnvironment()?.url;
 * ```
 */
export function storeFromEnvironment(): { url: string; from: string } | null {
  return resolveStoreUrl(undefined, projectStore());
}

/** The `store` of `./noema.jsonc`, if it has one (a located error when the file is invalid). */
function projectStore(): string | undefined {
  if (!existsSync(PROJECT_CONFIG)) return undefined;
  return readSettingsFile(resolve(PROJECT_CONFIG), ProjectConfig).store;
}

/**
 * The project in force for a command: `--project`, else `NOEMA_PROJECT`, else `project` in `./noema.jsonc`; null for
 * none. A name that is not one is a usage error (exit 2) naming where it came from.
 *
 * @example
 * ```ts
 * // inside an action: const project = projectOf(cmd); // "payments", or null
 * ```
 */
export function projectOf(cmd: CommandUnknownOpts): string | null {
  const all = cmd.optsWithGlobals() as Record<string, unknown>;
  if (all.project === true && cmd.name() !== "install-hooks") throw usageError("--project needs a project name");
  const pick = typeof all.project === "string"
    ? { name: all.project, from: "--project" }
    : process.env.NOEMA_PROJECT
    ? { name: process.env.NOEMA_PROJECT, from: "NOEMA_PROJECT" }
    : existsSync(PROJECT_CONFIG)
    ? { name: configProject(), from: `${PROJECT_CONFIG}: project` }
    : null;
  if (!pick?.name) return null;
  const problem = projectNameProblem(pick.name);
  if (problem) throw usageError(`${pick.from}: ${problem}`);
  return pick.name;
}

/**
 * The project a reading command sees: {@link projectOf}, or undefined (every project) with `--all-projects`.
 *
 * @example
 * ```ts
 * // inside an action: store.list({ project: projectScopeOf(cmd) });
 * ```
 */
export function projectScopeOf(cmd: CommandUnknownOpts): string | undefined {
  const all = cmd.optsWithGlobals() as Record<string, unknown>;
  const project = projectOf(cmd);
  if (all.allProjects === true) {
    if (typeof all.project === "string") throw usageError("--project and --all-projects: give one of them");
    return undefined;
  }
  return project ?? undefined;
}

/**
 * Opens the store a command was given; a usage error (exit 2) when none is. With `scoped`, the store is seen through
 * the command's project ({@link projectScopeOf}): a reading command's view.
 *
 * @example
 * ```ts
 * // inside an action: await withStore(cmd, async (store) => console.log(await store.status()));
 * ```
 */
export async function withStore<T>(
  cmd: CommandUnknownOpts,
  f: (store: SharedStore) => Promise<T>,
  options: { scoped?: boolean } = {},
): Promise<T> {
  const pick = storeUrlOf(cmd);
  if (pick === null) throw usageError("no shared store: give --store postgres://… (or file:///dir) or set NOEMA_STORE");
  const project = options.scoped ? projectScopeOf(cmd) : undefined;
  const { openSharedStore } = await import("../shared_store/open.ts");
  const opened = await openSharedStore(pick.url, pick.from);
  const store = project === undefined
    ? opened
    : new (await import("../shared_store/project_scope.ts")).ProjectScopedStore(opened, project);
  try {
    return await f(store);
  } finally {
    await store.close();
  }
}
