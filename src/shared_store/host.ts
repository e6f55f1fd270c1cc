/**
 * The name this machine publishes under: `NOEMA_HOST`, else the OS host name.
 *
 * @module
 */
import { hostname } from "node:os";
import process from "node:process";

/**
 * The host name recorded in the catalog for runs published from here.
 *
 * @example
 * ```ts
 * import { publishingHost } from "./host.ts";
 * publishingHost(); // "ci-runner-7"
 * ```
 */
export function publishingHost(env: Record<string, string | undefined> = process.env): string {
  return env.NOEMA_HOST || hostname();
}
