/**
 * Which tools an LLM run offers: built-ins by name and user tools from `.ts`
 * plugin files (loaded with the same rules and errors as policies and
 * adapters). Tool names must be unique.
 *
 * @module
 */
import { resolve } from "node:path";
import { EXIT, NoemaError } from "../../errors.ts";
import { importPluginFile } from "../../plugins/loader.ts";
import { type FileToolOptions, fileTools } from "./files.ts";
import { searchTool } from "./search.ts";
import { shellTool, type ShellToolOptions } from "./shell.ts";
import type { LlmTool } from "./tool.ts";

/** Names of the built-in tools, in the order they are offered. */
export const BUILTIN_TOOLS = ["shell", "read_file", "write_file", "edit_file", "list_dir", "search"] as const;

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

function checkTool(value: unknown, file: string): LlmTool {
  const t = value as LlmTool;
  const bad = (what: string) =>
    new NoemaError("bad_plugin", `does not export a tool: ${what}`, { file, exitCode: EXIT.USAGE });
  if (typeof t !== "object" || t === null) {
    throw bad("the default export must be { name, description, parameters, execute }");
  }
  if (typeof t.name !== "string" || !NAME.test(t.name)) throw bad("name must match [A-Za-z0-9_-]{1,64}");
  if (typeof t.description !== "string") throw bad("description must be a string");
  if (typeof t.parameters !== "object" || t.parameters === null) throw bad("parameters must be a JSON Schema object");
  if (typeof t.execute !== "function") throw bad("execute must be a function");
  return t;
}

/**
 * Resolves the `tools` setting: built-in names and paths of `.ts` tool files.
 * Without it every built-in tool is offered.
 *
 * @example
 * ```ts
 * import { resolveTools } from "noema";
 * const tools = await resolveTools(["read_file", "search"], { baseDir: "." });
 * ```
 */
export async function resolveTools(
  specs: readonly string[] | undefined,
  options: { baseDir: string; shell?: ShellToolOptions; files?: FileToolOptions; field?: string },
): Promise<LlmTool[]> {
  const builtins = new Map<string, LlmTool>([
    ["shell", shellTool(options.shell)],
    ...fileTools(options.files).map((t) => [t.name, t] as [string, LlmTool]),
    ["search", searchTool()],
  ]);
  const out: LlmTool[] = [];
  for (const [i, spec] of (specs ?? BUILTIN_TOOLS).entries()) {
    const builtin = builtins.get(spec);
    if (builtin) {
      out.push(builtin);
    } else if (/[\\/]|\.[cm]?[jt]s$/.test(spec)) {
      const path = resolve(options.baseDir, spec);
      const mod = await importPluginFile(path);
      out.push(checkTool(mod.default ?? mod.tool, path));
    } else {
      throw new NoemaError(
        "usage",
        `${options.field ?? "adapter.tools"}[${i}]: unknown tool ${JSON.stringify(spec)}: use one of ${
          BUILTIN_TOOLS.join(", ")
        } or a path to a .ts tool file`,
        { exitCode: EXIT.USAGE },
      );
    }
  }
  const seen = new Set<string>();
  for (const t of out) {
    if (seen.has(t.name)) {
      throw new NoemaError("usage", `tool ${t.name} is offered twice`, { exitCode: EXIT.USAGE });
    }
    seen.add(t.name);
  }
  return out;
}
