/**
 * Opens the shared store a URL names.
 *
 * @module
 */
import type { SharedStore } from "./shared_store.ts";
import { storeKind } from "./store_url.ts";

/**
 * Opens a shared store (the backend is loaded only when used: a run without
 * a store never loads the database client).
 *
 * @example
 * ```ts
 * import { openSharedStore } from "./open.ts";
 * const store = await openSharedStore("postgres://noema@127.0.0.1:5432/noema");
 * const team = await openSharedStore("file:///mnt/team/noema"); // a directory on a shared file system
 * ```
 */
export async function openSharedStore(url: string, from = "--store"): Promise<SharedStore> {
  switch (storeKind(url, from)) {
    case "postgres": {
      const { PostgresStore } = await import("./postgres/postgres_store.ts");
      return new PostgresStore(url);
    }
    case "files": {
      const { FileStore } = await import("./files/file_store.ts");
      return new FileStore(url);
    }
  }
}
