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

/** Built-in adapters by name. */
export const BUILTIN_ADAPTERS: Readonly<Record<string, AdapterPlugin>> = { minimal, shell, command, scripted, llm };
