/**
 * Which shared store a command uses, and how its URL is shown: `--store URL`,
 * else `NOEMA_STORE`, else `store` in `noema.jsonc`; none means local files
 * only. A URL's password is never printed, logged or recorded.
 *
 * @module
 */
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import { clientTls } from "./postgres/tls.ts";
import { firstHostUrl } from "./postgres/conninfo.ts";

/**
 * A store URL with its password replaced by `***` (safe to print or record).
 *
 * @example
 * ```ts
 * import { maskStoreUrl } from "./store_url.ts";
 * maskStoreUrl("postgres://ana:s3cret@db:5432/noema"); // "postgres://ana:***@db:5432/noema"
 * ```
 */
export function maskStoreUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    for (const k of [...u.searchParams.keys()]) {
      if (/pass|secret|token|key/i.test(k)) u.searchParams.set(k, "***");
    }
    return u.toString();
  } catch {
    // Several hosts (`h1:5432,h2:5432`), which the URL class cannot parse: the same masking on the text.
    return url.replace(/\/\/([^:/@]*):[^/?#]*@/, "//$1:***@")
      .replace(/([?&])([^=&#]*(?:pass|secret|token|key)[^=&#]*)=[^&#]*/gi, "$1$2=***");
  }
}

/** The kinds of store URL noema knows. */
export type StoreKind = "postgres" | "files";

/**
 * Checks a store URL and names its kind; throws a usage error (exit 2) naming
 * where it came from when it is not one noema can use.
 *
 * @example
 * ```ts
 * import { storeKind } from "./store_url.ts";
 * storeKind("postgres://db/noema", "--store"); // "postgres"
 * storeKind("file:///mnt/noema", "--store"); // "files"
 * ```
 */
export function storeKind(url: string, from: string): StoreKind {
  let protocol: string;
  try {
    // A postgres:// URL may name several hosts (libpq's `h1:5432,h2:5432`): checked as the URL of the first.
    protocol = new URL(/^postgres(ql)?:\/\//i.test(url) ? firstHostUrl(url) : url).protocol;
  } catch {
    throw new NoemaError("bad_store", `${from}: not a URL: ${JSON.stringify(maskStoreUrl(url))}`, {
      exitCode: EXIT.USAGE,
    });
  }
  if (protocol === "postgres:" || protocol === "postgresql:") {
    clientTls(url, process.env, from); // its TLS parameters: a bad one, or a file that cannot be read, is said now
    return "postgres";
  }
  if (protocol === "file:") {
    const u = new URL(url);
    if ((u.hostname === "" || u.hostname === "localhost") && u.pathname.length > 1 && !u.search && !u.hash) {
      return "files";
    }
    throw new NoemaError(
      "bad_store",
      `${from}: a files store is file:///absolute/path (no host, query or fragment): ${JSON.stringify(url)}`,
      { exitCode: EXIT.USAGE },
    );
  }
  throw new NoemaError(
    "bad_store",
    `${from}: unsupported store ${JSON.stringify(protocol)} ` +
      `(expected postgres://user@host:port/database or file:///absolute/path)`,
    { exitCode: EXIT.USAGE },
  );
}

/**
 * The store URL in force and where it came from: the option, else
 * `NOEMA_STORE`, else the setting; null when none is set.
 *
 * @example
 * ```ts
 * import { resolveStoreUrl } from "./store_url.ts";
 * resolveStoreUrl(undefined); // { url: process.env.NOEMA_STORE, from: "NOEMA_STORE" } when set
 * ```
 */
export function resolveStoreUrl(
  option: string | undefined,
  setting?: string,
  env: Record<string, string | undefined> = process.env,
): { url: string; from: string } | null {
  const pick = option !== undefined
    ? { url: option, from: "--store" }
    : env.NOEMA_STORE
    ? { url: env.NOEMA_STORE, from: "NOEMA_STORE" }
    : setting
    ? { url: setting, from: "noema.jsonc store" }
    : null;
  if (pick) storeKind(pick.url, pick.from);
  return pick;
}
