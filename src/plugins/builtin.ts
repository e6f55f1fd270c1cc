/**
 * The adapters built into noema (and into the compiled binary).
 *
 * @module
 */
import type { AdapterPlugin } from "./api.ts";
import command from "../../plugins/adapters/command.ts";
import minimal from "../../plugins/adapters/minimal.ts";
import scripted from "../../plugins/adapters/scripted.ts";
import shell from "../../plugins/adapters/shell.ts";

/** Built-in adapters by name. */
export const BUILTIN_ADAPTERS: Readonly<Record<string, AdapterPlugin>> = { minimal, shell, command, scripted };
