/**
 * Finding the `claude` executable: `adapter.claude_bin`, else
 * `NOEMA_CLAUDE_BIN`, else `claude` on `PATH`. A missing one is a usage
 * error (exit 2) that says where noema looked.
 *
 * @module
 */
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../../errors.ts";

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * The absolute path of the claude executable.
 *
 * @example
 * ```ts
 * import { findClaude } from "./binary.ts";
 * findClaude({ configured: "node_modules/.bin/claude", baseDir: "/repo" }); // "/repo/node_modules/.bin/claude"
 * ```
 */
export function findClaude(
  options: { configured?: string; baseDir?: string; env?: Record<string, string | undefined> } = {},
): string {
  const env = options.env ?? process.env;
  const given = options.configured ?? env.NOEMA_CLAUDE_BIN;
  const source = options.configured !== undefined ? "adapter.claude_bin" : "NOEMA_CLAUDE_BIN";
  if (given !== undefined && given !== "") {
    const path = isAbsolute(given) || !/[\\/]/.test(given) ? given : resolve(options.baseDir ?? ".", given);
    if (isAbsolute(path) && executable(path)) return path;
    if (!isAbsolute(path)) {
      const found = onPath(path, env.PATH);
      if (found) return found;
    }
    throw new NoemaError("no_claude", `${source}: ${given} is not an executable file`, { exitCode: EXIT.USAGE });
  }
  const found = onPath("claude", env.PATH);
  if (found) return found;
  throw new NoemaError(
    "no_claude",
    "claude (Claude Code) not found on PATH; install it (npm i -g @anthropic-ai/claude-code) or set NOEMA_CLAUDE_BIN or adapter.claude_bin",
    { exitCode: EXIT.USAGE },
  );
}

/**
 * The absolute path of the executable file `name` in the first directory of `path` (a `PATH` value) that holds one,
 * or null.
 *
 * @example
 * ```ts
 * import { onPath } from "./binary.ts";
 * onPath("sh", "/usr/bin:/bin"); // "/usr/bin/sh"
 * ```
 */
export function onPath(name: string, path: string | undefined): string | null {
  for (const dir of (path ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    if (executable(candidate)) return resolve(candidate);
  }
  return null;
}
