/**
 * The project a hook call belongs to, whatever directory the agent's shell moved to. An agent runs its hook command
 * in its current directory, and a `cd sub` in its shell carries over to the next calls (Claude Code's does): read
 * from there, noema would find no `noema.jsonc` (no rules), write a second root under `sub/.noema`, and split the
 * session's record in two. So `noema hook` works from the project's directory: the one the agent names
 * (`CLAUDE_PROJECT_DIR`, which Claude Code sets for its hooks, `GEMINI_PROJECT_DIR` for Gemini CLI's); else, inside
 * a git repository, the nearest directory up from the current one that holds `noema.jsonc` or `.noema`, up to the
 * repository's top, or that top; else the current one (never a directory above the repository, such as the home
 * directory that holds a `.noema` of its own).
 *
 * @module
 */
import { statSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import process from "node:process";

/** Whether `path` is a directory (following links: the agent's project may be reached through one). */
function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
}

/**
 * The directory a hook call works from (see the module documentation); null when there is none to go by (no
 * project named, and the current directory was removed).
 *
 * @example
 * ```ts
 * import { hookProjectDir } from "./hook_project.ts";
 * hookProjectDir({ CLAUDE_PROJECT_DIR: "/work/app" }, "/work/app/src"); // "/work/app" (when it is a directory)
 * ```
 */
export function hookProjectDir(
  env: Record<string, string | undefined> = process.env,
  cwd: string | null = currentDir(),
): string | null {
  for (const name of ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"]) {
    const dir = env[name];
    if (dir && isAbsolute(dir) && isDirectory(dir)) return resolve(dir);
  }
  if (cwd === null) return null;
  const here = resolve(cwd);
  const top = gitTop(here);
  if (top === null) return here;
  for (let dir = here; dir !== dirname(dir); dir = dirname(dir)) {
    if (statSync(join(dir, "noema.jsonc"), { throwIfNoEntry: false }) || isDirectory(join(dir, ".noema"))) return dir;
    if (dir === top) break;
  }
  return top;
}

/** The current directory, or null when it was removed (a resident server outliving its folder). */
export function currentDir(): string | null {
  try {
    return process.cwd();
  } catch {
    return null;
  }
}

/** The nearest directory up from `dir` (itself included) that holds `.git`, or null. */
function gitTop(dir: string): string | null {
  for (let d = dir;; d = dirname(d)) {
    if (statSync(join(d, ".git"), { throwIfNoEntry: false })) return d;
    if (dirname(d) === d) return null;
  }
}
