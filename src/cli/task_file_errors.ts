/**
 * Where in a task file a value the run refused came from: an unknown adapter
 * (`using`), a policy file that is not there (`policies[i]`), a workspace
 * that is not a directory (`workspace`). Those are found when the run starts,
 * far from the file; the error is said again naming the task file, the line
 * and the field, as the file's own mistakes are.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { NoemaError } from "../errors.ts";
import { keyLine, parseJsonc } from "../runtime/jsonc.ts";

/** The field of `file` (a parsed task file) that error `e` is about, or null. */
function fieldOf(e: NoemaError, task: Record<string, unknown>, dir: string): (string | number)[] | null {
  if (e.code === "unknown_adapter" && typeof task.using === "string" && e.detail.includes(JSON.stringify(task.using))) {
    return ["using"];
  }
  if (e.code === "bad_workspace" && typeof task.workspace === "string") return ["workspace"];
  if (e.code === "bad_plugin" && e.location.file !== undefined && Array.isArray(task.policies)) {
    const i = task.policies.findIndex((p) => typeof p === "string" && resolve(dir, p) === resolve(e.location.file!));
    if (i >= 0) return ["policies", i];
  }
  return null;
}

/**
 * `e` said again at its place in the task file `file` when it is about one of the file's values; else `e`.
 *
 * @example
 * ```ts
 * import { locatedInTaskFile } from "./task_file_errors.ts";
 * // try { … } catch (e) { throw locatedInTaskFile(e, "task.jsonc"); }
 * // → noema: task.jsonc:3: using: unknown adapter "shel" (did you mean "shell"?)…
 * ```
 */
export function locatedInTaskFile(e: unknown, file: string): unknown {
  if (!(e instanceof NoemaError) || (e.location.line !== undefined && e.location.file === file)) return e;
  // An error that names its field (an assertion of `verify`, a step's input) but not its line: the line, in its file.
  if (e.location.field !== undefined && e.location.line === undefined) {
    const same = e.location.file === undefined || resolve(e.location.file) === resolve(file);
    return same ? locatedAtField(e, file) : e;
  }
  let text: string, task: unknown;
  try {
    text = readFileSync(file, "utf8");
    task = parseJsonc(text, file);
  } catch {
    return e; // the file changed meanwhile: the error as it was
  }
  if (typeof task !== "object" || task === null || Array.isArray(task)) return e;
  const field = fieldOf(e, task as Record<string, unknown>, resolve(file, ".."));
  if (field === null) return e;
  const name = field.map((s, i) => typeof s === "number" ? `[${s}]` : i === 0 ? s : `.${s}`).join("");
  // The error's own place stays in its words (a policy file's `x.ts:3:` where it threw, or the path not found).
  return new NoemaError(e.code, e.message, { file, line: keyLine(text, field), field: name, exitCode: e.exitCode });
}

/** `"verify[0].kind"` as the segments of a JSON path: `["verify", 0, "kind"]`. */
function fieldPath(field: string): (string | number)[] {
  return field.split(/\.|(?=\[)/).filter((p) => p !== "").map((p) => /^\[\d+\]$/.test(p) ? Number(p.slice(1, -1)) : p);
}

/**
 * `e`, which names a field of the JSON or JSONC file `file` but no line, said again with the line of that field
 * (an unknown assertion kind in a task file's `verify` or a `--verify-file`); else `e`.
 *
 * @example
 * ```ts
 * import { locatedAtField } from "./task_file_errors.ts";
 * // locatedAtField(e, "checks.jsonc"); // → noema: checks.jsonc:4: [1].kind: unknown assertion kind …
 * ```
 */
export function locatedAtField(e: NoemaError, file: string): NoemaError {
  const field = e.location.field;
  if (field === undefined || e.location.line !== undefined) return e;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return e; // not a file to read (gone, or not one): the error as it was
  }
  // A field that is missing is said at the nearest one that is there (`[1].text` at `[1]`).
  const path = fieldPath(field);
  let line: number | undefined;
  while (line === undefined && path.length > 0) {
    line = keyLine(text, path);
    path.pop();
  }
  if (line === undefined) return e;
  return new NoemaError(e.code, e.detail, { file, line, field, exitCode: e.exitCode });
}
