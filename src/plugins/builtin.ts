/**
 * The adapters built into noema (and into the compiled binary).
 *
 * @module
 */
import type { AdapterPlugin } from "./api.ts";
import command from "../adapters/command.ts";
import llm from "../llm/adapter.ts";
import minimal from "../adapters/minimal.ts";
import scripted from "../adapters/scripted.ts";
import shell from "../adapters/shell.ts";
import type { Driver } from "../agents/driver.ts";
import { claudeCodeDriver } from "../agents/claude_code/run.ts";
import { llmDriver } from "../llm/driver.ts";

/** Built-in adapters by name. */
export const BUILTIN_ADAPTERS: Readonly<Record<string, AdapterPlugin>> = { minimal, shell, command, scripted, llm };

/**
 * Built-in drivers by name: `using` values that run an external agent as one
 * episode (its tool calls come in through hooks) instead of a plan.
 */
export const BUILTIN_DRIVERS: Readonly<Record<string, Driver>> = { "claude-code": claudeCodeDriver, llm: llmDriver };
