/**
 * Finding the real programs tests run, which a machine may lack (`.ci/run` installs those the suite needs).
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";

/**
 * Where a program is on PATH (or in /usr/sbin, /sbin, where a user's PATH may not look), or null.
 *
 * @example
 * ```ts
 * import { which } from "./helpers/programs.ts";
 * which("sh"); // "/usr/bin/sh"
 * ```
 */
export function which(name: string): string | null {
  const dirs = [...(process.env.PATH ?? "").split(":"), "/usr/sbin", "/sbin"].filter((d) => d !== "");
  return dirs.map((d) => join(d, name)).find((f) => existsSync(f)) ?? null;
}
