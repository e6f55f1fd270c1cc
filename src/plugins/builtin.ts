/**
 * The adapters and drivers built into noema (and into the compiled binary).
 *
 * Each is loaded on first use: the `llm` adapter brings the AI SDK and the
 * drivers bring their agent integrations, and a command that needs none of
 * them (a hook call, `noema list`) does not pay for evaluating them. Loading
 * lazily also keeps the drivers, which run episodes, out of the import graph
 * of the runtime they are built on.
 *
 * @module
 */
import type { AdapterPlugin } from "./api.ts";
import type { Driver } from "../agents/driver.ts";

/** Loads one built-in adapter. */
export type AdapterLoader = () => Promise<AdapterPlugin>;

/**
 * Built-in adapters by name, each loaded on first use.
 *
 * @example
 * ```ts
 * import { BUILTIN_ADAPTERS } from "noema";
 * const shell = await BUILTIN_ADAPTERS.shell();
 * console.log(Object.keys(BUILTIN_ADAPTERS), shell.name); // [ "minimal", "shell", "command", "scripted", "llm" ] shell
 * ```
 */
export const BUILTIN_ADAPTERS: Readonly<Record<string, AdapterLoader>> = {
  minimal: async () => (await import("../adapters/minimal.ts")).default,
  shell: async () => (await import("../adapters/shell.ts")).default,
  command: async () => (await import("../adapters/command.ts")).default,
  scripted: async () => (await import("../adapters/scripted.ts")).default,
  llm: async () => (await import("../llm/adapter.ts")).default,
};

/**
 * The `using` names that run a built-in driver (see {@link builtinDriver}).
 *
 * @example
 * ```ts
 * import { BUILTIN_DRIVER_NAMES } from "./builtin.ts";
 * BUILTIN_DRIVER_NAMES.includes("claude-code"); // true
 * ```
 */
export const BUILTIN_DRIVER_NAMES: readonly string[] = ["llm", "claude-code"];

/**
 * Built-in drivers by name: `using` values that run an external agent as one
 * episode (its tool calls come in through hooks or the AI SDK's callbacks)
 * instead of a plan. Each is loaded on first use.
 *
 * @example
 * ```ts
 * import { builtinDriver } from "./builtin.ts";
 * const driver = await builtinDriver("claude-code");
 * console.log(driver !== null, await builtinDriver("shell")); // true null
 * ```
 */
export async function builtinDriver(using: string | undefined): Promise<Driver | null> {
  switch (using) {
    case "claude-code":
      return (await import("../agents/claude_code/run.ts")).claudeCodeDriver;
    case "llm":
      return (await import("../llm/driver.ts")).llmDriver;
    default:
      return null;
  }
}
