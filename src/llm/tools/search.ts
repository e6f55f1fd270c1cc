/**
 * The `search` tool: finds lines matching a regular expression in the
 * workspace's text files. It walks the workspace without following symlinks
 * and skips `.git`, `node_modules` and `.noema`.
 *
 * @module
 */
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { confinePath, workspaceRelative } from "../workspace.ts";
import { fromValibot, type LlmTool, ToolError } from "./tool.ts";

const SKIP = new Set([".git", "node_modules", ".noema"]);

/**
 * Creates the search tool.
 *
 * @example
 * ```ts
 * import { searchTool } from "noema";
 * const t = searchTool({ max_matches: 50 });
 * ```
 */
export function searchTool(options: { max_matches?: number; max_file_bytes?: number } = {}): LlmTool {
  const { parameters, validate } = fromValibot(v.strictObject({
    pattern: v.pipe(v.string(), v.minLength(1), v.description("A regular expression (JavaScript syntax).")),
    path: v.optional(v.pipe(v.string(), v.minLength(1), v.description("Directory to search, relative.")), "."),
  }));
  const maxMatches = options.max_matches ?? 200;
  const maxBytes = options.max_file_bytes ?? 1_000_000;
  return {
    name: "search",
    description: "Search the workspace's text files for a regular expression; returns path:line: text.",
    parameters,
    validate,
    command: (i) => `search ${JSON.stringify(i.pattern)} in ${i.path ?? "."}`,
    execute(input, ctx) {
      let re: RegExp;
      try {
        re = new RegExp(String(input.pattern));
      } catch (e) {
        throw new ToolError(`invalid pattern: ${(e as Error).message}`, "InvalidPattern");
      }
      const start = confinePath(ctx.workspace, String(input.path ?? "."));
      const matches: string[] = [];
      const walk = (abs: string) => {
        if (matches.length >= maxMatches) return;
        const st = lstatSync(abs);
        if (st.isSymbolicLink()) return;
        if (st.isDirectory()) {
          for (const name of readdirSync(abs).sort()) if (!SKIP.has(name)) walk(join(abs, name));
          return;
        }
        if (!st.isFile() || st.size > maxBytes) return;
        const text = readFileSync(abs, "utf8");
        if (text.includes("\0")) return;
        const lines = text.split("\n");
        for (let i = 0; i < lines.length && matches.length < maxMatches; i++) {
          if (re.test(lines[i])) {
            matches.push(`${workspaceRelative(ctx.workspace, abs)}:${i + 1}: ${lines[i].slice(0, 300)}`);
          }
        }
      };
      walk(start);
      return matches.length === 0 ? "no matches" : matches.join("\n");
    },
  };
}
