/**
 * The file tools: `read_file`, `write_file`, `edit_file` and `list_dir`, all
 * confined to the workspace (see `../workspace.ts`). Writes are atomic (a
 * temporary file renamed into place), so a symlink at the target is replaced,
 * never written through.
 *
 * @module
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { Buffer } from "node:buffer";
import { dirname, join } from "node:path";
import process from "node:process";
import * as v from "valibot";
import { confinePath, workspaceRelative } from "../workspace.ts";
import { clip, fromValibot, type LlmTool, ToolError } from "./tool.ts";

/** Settings of the file tools (adapter config `files`). */
export interface FileToolOptions {
  /** Characters of a file returned by read_file. @default {100000} */
  max_read_chars?: number;
  /** Entries returned by list_dir. @default {500} */
  max_entries?: number;
}

const PathField = v.pipe(v.string(), v.minLength(1), v.description("A path relative to the workspace."));

function readText(abs: string, shown: string): string {
  let st;
  try {
    st = statSync(abs);
  } catch {
    throw new ToolError(`${shown}: no such file`, "NotFound");
  }
  if (!st.isFile()) throw new ToolError(`${shown}: not a regular file`, "NotAFile");
  return readFileSync(abs, "utf8");
}

function writeAtomic(abs: string, content: string): void {
  mkdirSync(dirname(abs), { recursive: true });
  const tmp = join(dirname(abs), `.noema-tmp-${process.pid}-${crypto.randomUUID().slice(0, 8)}`);
  writeFileSync(tmp, content, { flag: "wx" });
  renameSync(tmp, abs);
}

function readFileTool(o: FileToolOptions): LlmTool {
  const { parameters, validate } = fromValibot(v.strictObject({
    path: PathField,
    offset: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.description("First line (1-based)."))),
    limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.description("Number of lines."))),
  }));
  return {
    name: "read_file",
    description: "Read a text file of the workspace (optionally a range of lines).",
    parameters,
    validate,
    command: (i) => `read ${i.path}`,
    execute(input, ctx) {
      const path = String(input.path);
      let text = readText(confinePath(ctx.workspace, path), path);
      if (input.offset !== undefined || input.limit !== undefined) {
        const lines = text.split("\n");
        const from = (input.offset as number | undefined ?? 1) - 1;
        text = lines.slice(from, input.limit === undefined ? undefined : from + (input.limit as number)).join("\n");
      }
      return clip(text, o.max_read_chars ?? 100_000);
    },
  };
}

function writeFileTool(): LlmTool {
  const { parameters, validate } = fromValibot(v.strictObject({
    path: PathField,
    content: v.pipe(v.string(), v.description("The whole new content of the file.")),
  }));
  return {
    name: "write_file",
    description: "Create or overwrite a text file in the workspace.",
    parameters,
    validate,
    command: (i) => `write ${i.path}`,
    execute(input, ctx) {
      const abs = confinePath(ctx.workspace, String(input.path), { write: true });
      if (lstatOrNull(abs)?.isDirectory()) throw new ToolError(`${input.path}: is a directory`, "NotAFile");
      writeAtomic(abs, String(input.content));
      return `wrote ${Buffer.byteLength(String(input.content))} bytes to ${workspaceRelative(ctx.workspace, abs)}`;
    },
  };
}

function lstatOrNull(abs: string) {
  try {
    return lstatSync(abs);
  } catch {
    return null;
  }
}

function editFileTool(): LlmTool {
  const { parameters, validate } = fromValibot(v.strictObject({
    path: PathField,
    old_string: v.pipe(v.string(), v.minLength(1), v.description("Exact text to replace; must occur exactly once.")),
    new_string: v.pipe(v.string(), v.description("The replacement text.")),
  }));
  return {
    name: "edit_file",
    description: "Replace one exact, unique occurrence of old_string with new_string in a workspace file.",
    parameters,
    validate,
    command: (i) => `edit ${i.path}`,
    execute(input, ctx) {
      const path = String(input.path);
      const abs = confinePath(ctx.workspace, path);
      const text = readText(abs, path);
      const old = String(input.old_string);
      const first = text.indexOf(old);
      if (first < 0) throw new ToolError(`${path}: old_string not found`, "NoMatch");
      if (text.indexOf(old, first + 1) >= 0) {
        throw new ToolError(
          `${path}: old_string occurs more than once; give more context to make it unique`,
          "NotUnique",
        );
      }
      writeAtomic(abs, text.slice(0, first) + String(input.new_string) + text.slice(first + old.length));
      return `edited ${workspaceRelative(ctx.workspace, abs)}`;
    },
  };
}

function listDirTool(o: FileToolOptions): LlmTool {
  const { parameters, validate } = fromValibot(v.strictObject({
    path: v.optional(PathField, "."),
  }));
  return {
    name: "list_dir",
    description: "List a workspace directory: names with a trailing / for directories and @ for symlinks.",
    parameters,
    validate,
    command: (i) => `ls ${i.path ?? "."}`,
    execute(input, ctx) {
      const path = String(input.path ?? ".");
      const abs = confinePath(ctx.workspace, path);
      if (!lstatOrNull(abs)?.isDirectory() && !statSync(abs, { throwIfNoEntry: false })?.isDirectory()) {
        throw new ToolError(`${path}: not a directory`, "NotADirectory");
      }
      const max = o.max_entries ?? 500;
      const names = readdirSync(abs, { withFileTypes: true })
        .map((d) => d.name + (d.isSymbolicLink() ? "@" : d.isDirectory() ? "/" : ""))
        .sort();
      return names.length > max ? [...names.slice(0, max), `… ${names.length - max} more`] : names;
    },
  };
}

/**
 * The four file tools.
 *
 * @example
 * ```ts
 * import { fileTools } from "noema";
 * fileTools().map((t) => t.name); // ["read_file", "write_file", "edit_file", "list_dir"]
 * ```
 */
export function fileTools(options: FileToolOptions = {}): LlmTool[] {
  return [readFileTool(options), writeFileTool(), editFileTool(), listDirTool(options)];
}
