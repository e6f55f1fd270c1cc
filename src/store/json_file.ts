/**
 * Reading one JSON artifact with errors that name the file, the line and
 * the problem.
 *
 * @module
 */
import { closeSync, fstatSync, readFileSync } from "node:fs";
import { type ParseError, parseTree } from "jsonc-parser";
import { EXIT, NoemaError } from "../errors.ts";
import { MAX_JSON_DEPTH, tooDeep as depthProblem } from "./json_scan.ts";
import { limits } from "./limits.ts";
import { openRegularFile, readFromStart, type ReadOptions } from "./regular_file.ts";

// ignoreBOM keeps a leading U+FEFF in the text so the BOM check below sees it (by default it is dropped).
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function lineOfPosition(text: string, message: string): number | undefined {
  // V8: "... at position 12 (line 2 column 3)"; JSC: no position. Both may give a line.
  const lineMatch = /line (\d+)/.exec(message);
  if (lineMatch) return Number(lineMatch[1]);
  const pos = /position (\d+)/.exec(message);
  if (pos) return text.slice(0, Number(pos[1])).split("\n").length;
  return undefined;
}

/**
 * The file open at `fd` read again from its start (`size` bytes at most) and decoded strictly; invalid UTF-8 is a
 * `bad_json` error.
 */
function strictText(fd: number, label: string, size: number = fstatSync(fd).size): string {
  const bytes = readFromStart(fd, size);
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new NoemaError("bad_json", "not valid UTF-8", { file: label });
  }
}

/** The file open at `fd`, decoded strictly, when its size (by `fstat`) is at most `maxBytes`; never more is read. */
function boundedText(fd: number, label: string, maxBytes: number): string {
  const size = fstatSync(fd).size;
  if (size > maxBytes) {
    const why = `${size} bytes, over noema's limit of ${maxBytes} bytes for this file: not read`;
    throw new NoemaError("too_large", why, { file: label });
  }
  return strictText(fd, label, size);
}

/** Throws `too_large` for a file over `limits().artifactBytes` (by `fstat`): it is not read. */
function refuseOversized(fd: number, label: string): void {
  const size = fstatSync(fd).size, most = limits().artifactBytes;
  if (size <= most) return;
  const why = `${size} bytes, over noema's limit of ${most} bytes for a JSON artifact (16 × NOEMA_MAX_LINE_BYTES): ` +
    "not read";
  throw new NoemaError("too_large", why, { file: label });
}

/**
 * Reads and parses a JSON file. Missing file, not a regular file, one over
 * the artifact size limit (`limits().artifactBytes`), invalid UTF-8, a byte order
 * mark, nesting deeper than {@link MAX_JSON_DEPTH}, invalid JSON and a
 * non-object root each throw a {@link NoemaError}
 * that names the file (and the line, when known).
 *
 * @example
 * ```ts
 * import { readJsonFile } from "noema";
 * const state = readJsonFile(".noema/episodes/ep_1/state.json");
 * ```
 */
export function readJsonFile(
  path: string,
  label: string = path,
  options: ReadOptions = {},
): Record<string, unknown> {
  return readJsonText(path, label, options).value;
}

/**
 * {@link readJsonFile}, also giving the text that was parsed (for a caller
 * that scans it, such as `validate`, without reading the file twice).
 * `options.parse` replaces `JSON.parse` (a syntax error it throws is
 * reported as `JSON.parse`'s would be). With `options.maxBytes`, a file
 * larger than that (by `fstat` of the opened file) is a `too_large` error and
 * is not read.
 *
 * @example
 * ```ts
 * import { readJsonText } from "./json_file.ts";
 * const { text, value } = readJsonText(".noema/episodes/ep_1/state.json");
 * ```
 */
export function readJsonText(
  path: string,
  label: string = path,
  options: ReadOptions & { parse?: (text: string) => unknown; maxBytes?: number } = {},
): { text: string; value: Record<string, unknown> } {
  let text: string;
  try {
    // Only a regular file is read: a FIFO would block, a symlink to /dev/zero would never end.
    const fd = openRegularFile(path, label, options);
    try {
      if (options.maxBytes !== undefined) {
        text = boundedText(fd, label, options.maxBytes);
      } else {
        refuseOversized(fd, label);
        // Decoded as it is read: under Bun an ASCII file becomes a string that takes over the bytes read, not a copy
        // of them (a 71 MB state.json: 99 instead of 171 MiB at the peak). A replacement character means invalid
        // UTF-8 or a real U+FFFD: then the bytes are read again and decoded strictly to tell.
        text = readFileSync(fd, "utf8");
        if (text.includes("\uFFFD")) text = strictText(fd, label);
      }
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    if (e instanceof NoemaError) throw e;
    const code = (e as { code?: string }).code;
    if (code === "ENOENT") throw new NoemaError("not_found", "file not found", { file: label });
    throw new NoemaError("unreadable", `cannot read: ${(e as Error).message}`, { file: label });
  }
  if (text.charCodeAt(0) === 0xfeff) {
    throw new NoemaError("bad_json", "starts with a byte order mark (BOM); JSON artifacts must be plain UTF-8", {
      file: label,
      line: 1,
    });
  }
  // Nothing recursive touches text nested deeper than the limit (no stack overflow in any later reader).
  const tooDeep = depthProblem(text);
  if (tooDeep) {
    throw new NoemaError("bad_json", `nested deeper than ${MAX_JSON_DEPTH} levels (JSON artifacts are shallow)`, {
      file: label,
      line: tooDeep.line,
    });
  }
  let value: unknown;
  try {
    value = options.parse ? options.parse(text) : JSON.parse(text);
  } catch (e) {
    const msg = (e as Error).message;
    let line = lineOfPosition(text, msg);
    let where = "";
    if (line === undefined) {
      // JSC's messages carry no position: find the first syntax error with a tolerant parser.
      const errors: ParseError[] = [];
      parseTree(text, errors, { allowTrailingComma: false, disallowComments: true });
      const offset = errors[0]?.offset ?? text.length;
      const before = text.slice(0, offset);
      line = before.split("\n").length;
      where = ` (line ${line} column ${offset - before.lastIndexOf("\n")})`;
    }
    throw new NoemaError("bad_json", `invalid JSON: ${msg}${where}`, { file: label, line });
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new NoemaError("bad_json", "expected a JSON object at the top level", {
      file: label,
      line: 1,
      exitCode: EXIT.ERROR,
    });
  }
  return { text, value: value as Record<string, unknown> };
}
