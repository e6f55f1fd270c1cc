/**
 * Every `noema` command, in `--help` order, each loaded only when needed: a
 * command line that names one command loads that command's module (and what
 * it imports), not the other twenty. Loading them all costs about 10 ms of a
 * cold start (the runtime, validators, the report page…), more than `noema
 * summary` itself. `--help`, no command, an unknown word and `completions`
 * (which lists them) load every command.
 *
 * To add a command, create `src/cli/commands/<name>.ts` exporting a
 * {@link RegisterCommand} and add one entry here.
 *
 * @module
 */
import type { RegisterCommand } from "../context.ts";

/** One command module: the names it registers and how to load it. */
export interface CommandEntry {
  /** The command names (and aliases) its register function adds. */
  readonly names: readonly string[];
  /** Loads the module; returns the function that registers the command(s). */
  load(): Promise<RegisterCommand>;
  /** Needs every command registered to work (`completions` lists them all). @default {false} */
  readonly needsAll?: boolean;
}

/** The commands, registered in this order (which is the `--help` order). */
export const COMMANDS: readonly CommandEntry[] = [
  // Run (approve, resume… go here too)
  { names: ["run"], load: async () => (await import("./run.ts")).registerRun },
  { names: ["approve", "reject"], load: async () => (await import("./approval.ts")).registerApproval },
  { names: ["resume"], load: async () => (await import("./approval.ts")).registerResume },
  // Agents (hooks)
  { names: ["hook"], load: async () => (await import("./hook.ts")).registerHook },
  { names: ["install-hooks"], load: async () => (await import("./install_hooks.ts")).registerInstallHooks },
  { names: ["mcp"], load: async () => (await import("./mcp.ts")).registerMcp },
  { names: ["rules"], load: async () => (await import("./rules.ts")).registerRules },
  // Inspect
  { names: ["list", "ls"], load: async () => (await import("./list.ts")).registerList },
  { names: ["last"], load: async () => (await import("./last.ts")).registerLast },
  { names: ["view"], load: async () => (await import("./view.ts")).registerView },
  { names: ["state"], load: async () => (await import("./state.ts")).registerState },
  { names: ["summary"], load: async () => (await import("./summary.ts")).registerSummary },
  { names: ["events"], load: async () => (await import("./events.ts")).registerEvents },
  { names: ["plan"], load: async () => (await import("./plan.ts")).registerPlan },
  { names: ["diff"], load: async () => (await import("./diff.ts")).registerDiff },
  { names: ["report"], load: async () => (await import("./report.ts")).registerReport },
  { names: ["serve"], load: async () => (await import("./serve.ts")).registerServe },
  // Integrity
  { names: ["validate"], load: async () => (await import("./validate.ts")).registerValidate },
  { names: ["verify"], load: async () => (await import("./verify.ts")).registerVerify },
  { names: ["attest"], load: async () => (await import("./attest.ts")).registerAttest },
  { names: ["keys"], load: async () => (await import("./keys.ts")).registerKeys },
  { names: ["schema"], load: async () => (await import("./schema.ts")).registerSchema },
  // Shared store
  { names: ["store"], load: async () => (await import("./store.ts")).registerStore },
  { names: ["sync"], load: async () => (await import("./store.ts")).registerSync },
  { names: ["pull"], load: async () => (await import("./store.ts")).registerPull },
  { names: ["approvals"], load: async () => (await import("./store.ts")).registerApprovals },
  { names: ["prune"], load: async () => (await import("./prune.ts")).registerPrune },
  // Export
  { names: ["export"], load: async () => (await import("./export.ts")).registerExport },
  // Plugin authoring
  { names: ["init"], load: async () => (await import("./init.ts")).registerInit },
  { names: ["policy"], load: async () => (await import("./policy.ts")).registerPolicy },
  // Shell
  {
    names: ["completions"],
    load: async () => (await import("./completions.ts")).registerCompletions,
    needsAll: true,
  },
  { names: ["version"], load: async () => (await import("./version.ts")).registerVersion },
];

/**
 * The register functions a command line needs, in `--help` order: only the
 * named command's when `command` names one (and it does not need the
 * others), else every command's.
 *
 * @example
 * ```ts
 * import { loadCommands } from "./index.ts";
 * const one = await loadCommands("summary"); // [registerSummary]
 * const all = await loadCommands(null); // every command, for --help
 * ```
 */
export async function loadCommands(command: string | null): Promise<RegisterCommand[]> {
  const entry = command === null ? undefined : COMMANDS.find((c) => c.names.includes(command));
  if (entry && !entry.needsAll) return [await entry.load()];
  return await Promise.all(COMMANDS.map((c) => c.load()));
}
