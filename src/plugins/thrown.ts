/**
 * Describing whatever a plugin threw (or rejected with) as a small, plain
 * record `{ type, message, at? }`, without ever throwing: an `Error`, a
 * string, `null`, an object with a cycle, a proxy whose traps throw.
 *
 * @module
 */
import { basename } from "node:path";
import { nodeUrl } from "../builtins.ts";
import { cutString, PLUGIN_LIMITS, toPlainJson } from "./plain_json.ts";

/** What a plugin threw, as recorded in events. */
export interface ThrownDescription {
  /** The error's `name` (`TypeError`…), or `NonError` for a thrown value that is not an error. */
  type: string;
  /** Its message (at most 8 KiB), or for a non-error, the value as compact JSON. */
  message: string;
  /** Where it was thrown in the plugin's own file, `file.ts:LINE:COL`, when the stack says. */
  at?: string;
}

function read(o: unknown, key: string): unknown {
  try {
    return (o as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

/**
 * The first stack frame in `file` (an absolute path), as `name.ts:LINE:COL`;
 * null when the stack names no line of that file.
 *
 * @example
 * ```ts
 * import { throwSite } from "noema";
 * throwSite("Error: x\n    at advise (/p/no-rm.ts:7:13)", "/p/no-rm.ts"); // "no-rm.ts:7:13"
 * ```
 */
export function throwSite(stack: string, file: string): string | null {
  const forms = [file, nodeUrl().pathToFileURL(file).href];
  for (const line of stack.split("\n").slice(0, 64)) {
    for (const form of forms) {
      const i = line.indexOf(form);
      if (i < 0) continue;
      const m = /^:(\d+):(\d+)/.exec(line.slice(i + form.length));
      if (m) return `${basename(file)}:${m[1]}:${m[2]}`;
    }
  }
  return null;
}

/**
 * Describes a thrown value. Never throws. With `file` (the plugin's absolute
 * path), `at` is the first stack frame in that file.
 *
 * @example
 * ```ts
 * import { describeThrown } from "noema";
 * describeThrown(new RangeError("too big")); // { type: "RangeError", message: "too big" }
 * describeThrown("boom"); // { type: "NonError", message: "boom" }
 * describeThrown({ code: 7 }); // { type: "NonError", message: '{"code":7}' }
 * ```
 */
export function describeThrown(e: unknown, file: string | null = null): ThrownDescription {
  try {
    const message = read(e, "message");
    if (typeof e === "object" && e !== null && typeof message === "string") {
      const name = read(e, "name");
      const out: ThrownDescription = {
        type: typeof name === "string" && name !== "" ? cutString(name, 200) : "Error",
        message: cutString(message, PLUGIN_LIMITS.adviceBytes),
      };
      const stack = read(e, "stack");
      const at = file && typeof stack === "string" ? throwSite(stack, file) : null;
      if (at) out.at = at;
      return out;
    }
    if (typeof e === "string") return { type: "NonError", message: cutString(e, PLUGIN_LIMITS.adviceBytes) };
    if (e === undefined) return { type: "NonError", message: "undefined" };
    return { type: "NonError", message: JSON.stringify(toPlainJson(e, { maxBytes: 1024, maxDepth: 8 })) };
  } catch {
    return { type: "NonError", message: "an unreadable value" };
  }
}
