/**
 * The composition root: what a `using` name means. Built-in adapters (the
 * plan-driven runtime's act step) and built-in drivers (an external agent run
 * as one episode) are mapped here, and the public {@link run} and
 * {@link resume} dispatch to a driver or to the plan-driven runtime.
 *
 * `src/runtime/` sits below everything here and imports none of it: the
 * runtime receives the adapters it may load by name as its `adapters` option,
 * and never sees a driver. The CLI and the library (`noema`) both come through
 * this file.
 *
 * Each adapter and driver is loaded on first use: the `llm` adapter brings the
 * AI SDK and the drivers bring their agent integrations, and a command that
 * needs none of them (a hook call, `noema list`, a shell run) does not pay for
 * evaluating them. The resume path, too, is loaded only by {@link resume}.
 *
 * @module
 */
import type { Driver } from "./agents/driver.ts";
import type { AdapterRegistry, LoadedAdapter } from "./plugins/loader.ts";
import { isAdapterPath, loadAdapterFrom } from "./plugins/loader.ts";
import { EXIT, NoemaError } from "./errors.ts";
import { didYouMean } from "./runtime/jsonc.ts";
import type { RunResult } from "./runtime/engine.ts";
import type { ResumeOptions } from "./runtime/resume.ts";
import { run as runPlanned, type RunOptions } from "./runtime/run.ts";
import { checkTask } from "./runtime/core/prepare.ts";

export type { AdapterLoader, AdapterRegistry } from "./plugins/loader.ts";

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
export const BUILTIN_ADAPTERS: AdapterRegistry = {
  minimal: async () => (await import("./adapters/minimal.ts")).default,
  shell: async () => (await import("./adapters/shell.ts")).default,
  command: async () => (await import("./adapters/command.ts")).default,
  scripted: async () => (await import("./adapters/scripted.ts")).default,
  llm: async () => (await import("./llm/adapter.ts")).default,
};

/**
 * Built-in drivers by name: `using` values that run an external agent as one
 * episode (its tool calls come in through hooks or the AI SDK's callbacks)
 * instead of a plan. Each is loaded on first use.
 *
 * @example
 * ```ts
 * import { BUILTIN_DRIVERS } from "noema";
 * console.log(Object.keys(BUILTIN_DRIVERS)); // [ "claude-code", "llm" ]
 * ```
 */
export const BUILTIN_DRIVERS: Readonly<Record<string, () => Promise<Driver>>> = {
  "claude-code": async () => (await import("./agents/claude_code/run.ts")).claudeCodeDriver,
  llm: async () => (await import("./llm/driver.ts")).llmDriver,
};

/**
 * The built-in driver a `using` name selects, or null when it names an
 * adapter (or nothing): the episode is then plan-driven.
 *
 * @example
 * ```ts
 * import { builtinDriver } from "noema";
 * const driver = await builtinDriver("claude-code");
 * console.log(driver !== null, await builtinDriver("shell")); // true null
 * ```
 */
export async function builtinDriver(using: string | null | undefined): Promise<Driver | null> {
  return typeof using === "string" && Object.hasOwn(BUILTIN_DRIVERS, using) ? await BUILTIN_DRIVERS[using]() : null;
}

/**
 * Finds an adapter: a built-in name (`minimal`, `shell`, `command`,
 * `scripted`, `llm`) or a path to a `.ts` file.
 *
 * @example
 * ```ts
 * import { loadAdapter } from "noema";
 * const { plugin } = await loadAdapter("shell");
 * ```
 */
export async function loadAdapter(ref: string): Promise<LoadedAdapter> {
  return await loadAdapterFrom(ref, BUILTIN_ADAPTERS);
}

/**
 * The usage error (exit 2) for a `using` name noema does not know: it lists
 * every adapter and driver name, with a did-you-mean.
 *
 * @example
 * ```ts
 * import { unknownAdapterError } from "./drivers.ts";
 * unknownAdapterError("claude", ["shell", "claude-code"]).message; // unknown adapter "claude" (did you mean "claude-code"?)…
 * ```
 */
export function unknownAdapterError(ref: string, known: readonly string[]): NoemaError {
  const names = [...new Set(known)];
  const hint = didYouMean(ref, names);
  return new NoemaError(
    "unknown_adapter",
    `unknown adapter ${JSON.stringify(ref)}${hint ? ` (did you mean "${hint}"?)` : ""}: use one of ${
      names.join(", ")
    } or a path to a .ts file`,
    { exitCode: EXIT.USAGE },
  );
}

/**
 * Runs one episode toward a task and writes its artifacts under
 * `<root>/episodes/<episode_id>/`. A `using` that names a driver
 * (`claude-code`, `llm`) hands the episode to that driver; any other runs the
 * plan-driven runtime with that adapter (see the runtime's `run` for the
 * event order, errors and pauses).
 *
 * @example
 * ```ts
 * import { run } from "noema";
 * const r = await run("List the files", { using: "shell", steps: [{ kind: "act", description: "ls", inputs: { command: "ls" } }] });
 * console.log(r.episode_id, r.status, r.outcome);
 * ```
 */
export async function run(task: string, options: RunOptions = {}): Promise<RunResult> {
  checkTask(task); // before any driver starts anything: a task over the limit writes nothing
  const driver = typeof options.using === "string" ? await builtinDriver(options.using) : null;
  if (driver) return await driver.run(task, options);
  const adapters = options.adapters ?? BUILTIN_ADAPTERS;
  const u = options.using;
  if (typeof u === "string" && !Object.hasOwn(adapters, u) && !isAdapterPath(u)) {
    throw unknownAdapterError(u, [...Object.keys(adapters), ...Object.keys(BUILTIN_DRIVERS)]);
  }
  return await runPlanned(task, { ...options, adapters });
}

/**
 * Continues a paused or crashed run in the same episode directory: an
 * episode a driver recorded (its `start` event's `using`) is continued by that
 * driver, any other by the plan-driven runtime (see the runtime's `resume`).
 *
 * @example
 * ```ts
 * import { resume } from "noema";
 * const r = await resume("ep_01K9RBBMXXRSFWR49SXFGF4SPR");
 * console.log(r.status, r.exit_code);
 * ```
 */
export async function resume(ref: string, options: ResumeOptions = {}): Promise<RunResult> {
  // Loaded here, not at the top: `noema run` does not pay for evaluating the resume path.
  const [{ resumableEpisode, resume: resumePlanned }, { episodeUsing }] = await Promise.all([
    import("./runtime/resume.ts"),
    import("./agents/driver.ts"),
  ]);
  const { dir } = resumableEpisode(ref, options);
  const driver = await builtinDriver(episodeUsing(dir));
  if (driver) return await driver.resume(dir, options);
  return await resumePlanned(ref, { ...options, adapters: options.adapters ?? BUILTIN_ADAPTERS });
}
