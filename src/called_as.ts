/**
 * How the user called noema, for the commands noema prints for them to type
 * next (`view: … view <id>`, `noema init`'s next steps, the commands errors name): `npx noema` when
 * the package's launcher ran under `npx` (npm sets `npm_command=exec`; the
 * launcher passes it on as `NOEMA_CALLED_AS=npx`), where a bare `noema` is
 * not on the user's PATH; else `noema` (the binary, a global install).
 *
 * @module
 */
import process from "node:process";

/**
 * The command that runs noema the way the user ran it: `npx noema` or `noema`.
 *
 * @example
 * ```ts
 * import { calledAs } from "./called_as.ts";
 * console.log(`view: ${calledAs()} view last`); // "view: npx noema view last" under npx
 * ```
 */
export function calledAs(): string {
  return process.env.NOEMA_CALLED_AS === "npx" ? "npx noema" : "noema";
}

/**
 * The command that runs a tool of noema's package the same way: `npx bun` under npx (the `bun` the package installs is
 * in `node_modules/.bin`, not on PATH), else the tool itself.
 *
 * @example
 * ```ts
 * import { toolCalledAs } from "./called_as.ts";
 * toolCalledAs("bun"); // "npx bun" under npx
 * ```
 */
export function toolCalledAs(tool: string): string {
  return process.env.NOEMA_CALLED_AS === "npx" ? `npx ${tool}` : tool;
}
