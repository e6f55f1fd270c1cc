/**
 * The shared store a command uses: the global `--store URL`, else
 * `NOEMA_STORE`, else `store` in `./noema.jsonc`; null means local files only.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import type { SharedStore } from "../shared_store/shared_store.ts";
import { resolveStoreUrl } from "../shared_store/store_url.ts";
import { usageError } from "./errors.ts";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { PROJECT_CONFIG } from "../runtime/load_settings.ts";
import { ProjectConfig } from "../runtime/settings.ts";
import { readSettingsFile } from "../runtime/jsonc.ts";

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
 * Opens the store a command was given; a usage error (exit 2) when none is.
 *
 * @example
 * ```ts
 * // inside an action: await withStore(cmd, async (store) => console.log(await store.status()));
 * ```
 */
export async function withStore<T>(cmd: CommandUnknownOpts, f: (store: SharedStore) => Promise<T>): Promise<T> {
  const pick = storeUrlOf(cmd);
  if (pick === null) throw usageError("no shared store: give --store postgres://… (or file:///dir) or set NOEMA_STORE");
  const { openSharedStore } = await import("../shared_store/open.ts");
  const store = await openSharedStore(pick.url, pick.from);
  try {
    return await f(store);
  } finally {
    await store.close();
  }
}
