/**
 * JSONC files (task files, `noema.jsonc`, scripts): comments and trailing
 * commas allowed, errors located by line and column, unknown keys reported
 * with a did-you-mean suggestion.
 *
 * @module
 */
import { closeSync, fstatSync } from "node:fs";
import { findNodeAtLocation, type ParseError, parseTree, printParseErrorCode } from "jsonc-parser";
import * as v from "valibot";
import { EXIT, NoemaError } from "../errors.ts";
import { ownEntry } from "../json.ts";
import { issuePath, toProblems } from "../schema/problems.ts";
import { isUnknownKeyIssue, knownKeysAt } from "../schema/unknown_key.ts";
import { MAX_JSON_DEPTH, scanJson } from "../store/json_scan.ts";
import { limits } from "../store/limits.ts";
import { openRegularFile, readFromStart } from "../store/regular_file.ts";
import { didYouMean } from "../did_you_mean.ts";

export { didYouMean };

function lineCol(text: string, offset: number): { line: number; column: number } {
  let line = 1, last = -1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      last = i;
    }
  }
  return { line, column: offset - last };
}

/**
 * Parses JSONC text. Throws a usage {@link NoemaError} naming the file, line
 * and column of the first syntax error, the line of a key repeated in one
 * object (JSON parsers disagree on which value wins), the line where the
 * text nests deeper than {@link MAX_JSON_DEPTH} levels, of a lone surrogate,
 * or of a number too large to be one (`1e400` would read as Infinity).
 *
 * @example
 * ```ts
 * import { parseJsonc } from "noema";
 * parseJsonc('{ "task": "x", // comment\n }', "task.jsonc"); // { task: "x" }
 * ```
 */
export function parseJsonc(text: string, file: string): unknown {
  const scan = scanJson(text, { comments: true });
  if (scan.tooDeep) {
    throw new NoemaError("bad_jsonc", `nested deeper than ${MAX_JSON_DEPTH} levels`, {
      file,
      line: scan.tooDeep.line,
      exitCode: EXIT.USAGE,
    });
  }
  const errors: ParseError[] = [];
  const tree = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0) {
    const e = errors[0];
    const { line, column } = lineCol(text, e.offset);
    throw new NoemaError("bad_jsonc", `column ${column}: ${syntaxProblem(printParseErrorCode(e.error))}`, {
      file,
      line,
      exitCode: EXIT.USAGE,
    });
  }
  if (!tree) throw new NoemaError("bad_jsonc", "file is empty", { file, line: 1, exitCode: EXIT.USAGE });
  const dup = scan.duplicates[0];
  if (dup) {
    throw new NoemaError("duplicate_key", `duplicate key ${JSON.stringify(dup.key)} (each key may appear once)`, {
      file,
      line: dup.line,
      field: dup.path ? `${dup.path}.${dup.key}` : dup.key,
      exitCode: EXIT.USAGE,
    });
  }
  const lone = LONE_SURROGATE_ESCAPE.test(text) ? loneSurrogate(tree, "") : null;
  if (lone) {
    throw new NoemaError(
      "bad_jsonc",
      `${lone.what} holds a lone UTF-16 surrogate (${lone.escape}), which is not text: noema records only ` +
        "well-formed strings (a surrogate must be half of a pair, e.g. \\ud83d\\ude00)",
      { file, line: lineCol(text, lone.offset).line, field: lone.path || undefined, exitCode: EXIT.USAGE },
    );
  }
  const huge = HUGE_NUMBER.test(text) ? nonFiniteNumber(tree, "") : null;
  if (huge) {
    throw new NoemaError(
      "bad_jsonc",
      `the number ${
        text.slice(huge.offset, huge.offset + huge.length)
      } is too large for a JSON value (it reads as Infinity, which JSON cannot hold)`,
      { file, line: lineCol(text, huge.offset).line, field: huge.path || undefined, exitCode: EXIT.USAGE },
    );
  }
  return nodeValue(tree);
}

/** What each of jsonc-parser's error codes means, in words (the code itself follows, for a search). */
const SYNTAX_PROBLEMS: Readonly<Record<string, string>> = {
  InvalidSymbol: "unexpected character",
  InvalidNumberFormat: "not a number",
  PropertyNameExpected: 'expected a key in double quotes ("key": value)',
  ValueExpected: "expected a value",
  ColonExpected: "expected ':' after the key",
  CommaExpected: "expected ',' before the next item",
  CloseBraceExpected: "expected '}' to close the object",
  CloseBracketExpected: "expected ']' to close the list",
  EndOfFileExpected: "unexpected text after the end of the value",
  InvalidCommentToken: "not a comment (// or /* */)",
  UnexpectedEndOfComment: "a /* comment is not closed with */",
  UnexpectedEndOfString: 'a string is not closed with "',
  UnexpectedEndOfNumber: "a number is cut short",
  InvalidUnicode: "not a \\u escape (\\u and four hex digits)",
  InvalidEscapeCharacter: 'not an escape a string may hold (\\n, \\t, \\", \\\\, \\u…)',
  InvalidCharacter: "a control character in a string (write it as an escape, e.g. \\n)",
};

/** A syntax error in words, with the parser's code: `expected ',' before the next item (CommaExpected)`. */
function syntaxProblem(code: string): string {
  const words = ownEntry(SYNTAX_PROBLEMS, code);
  return words === undefined ? code : `${words} (${code})`;
}

/** A number that may be too large for a double: an exponent of three digits or more, or 309 digits in a row. */
const HUGE_NUMBER = /\d[eE][+-]?\d{3}|\d{309}/;

/** The first number (in document order) that parses to ±Infinity: its path, offset and length. */
function nonFiniteNumber(
  node: import("jsonc-parser").Node,
  path: string,
): { path: string; offset: number; length: number } | null {
  if (node.type === "number") {
    return Number.isFinite(node.value) ? null : { path, offset: node.offset, length: node.length };
  }
  for (const [i, child] of (node.children ?? []).entries()) {
    const bad = node.type === "object"
      ? nonFiniteNumber(
        child.children![1],
        path === "" ? child.children![0].value : `${path}.${child.children![0].value}`,
      )
      : node.type === "array"
      ? nonFiniteNumber(child, `${path}[${i}]`)
      : null;
    if (bad) return bad;
  }
  return null;
}

/** A `\uD800`–`\uDFFF` escape: the text may decode to a lone surrogate (a raw one cannot come out of UTF-8). */
const LONE_SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * The first key or string value (in document order) that holds a lone UTF-16 surrogate: its path
 * (`steps[0].inputs.a`), what it is (a key or a string), its offset in the text and the surrogate as an escape.
 */
function loneSurrogate(
  node: import("jsonc-parser").Node,
  path: string,
): { path: string; what: string; offset: number; escape: string } | null {
  const found = (s: string, what: string, at: string, offset: number) => {
    if (s.isWellFormed()) return null;
    const unit = [...s].find((ch) => !ch.isWellFormed())!.charCodeAt(0);
    return { path: at, what, offset, escape: `\\u${unit.toString(16).padStart(4, "0")}` };
  };
  if (node.type === "string") return found(node.value as string, "a string", path, node.offset);
  for (const [i, child] of (node.children ?? []).entries()) {
    if (node.type === "object") {
      const key = child.children![0].value as string;
      const at = path === "" ? key : `${path}.${key}`;
      const shown = key.isWellFormed() ? at : `${path === "" ? "" : `${path}.`}${JSON.stringify(key)}`;
      const bad = found(key, "a key", shown, child.offset) ?? loneSurrogate(child.children![1], shown);
      if (bad) return bad;
    } else if (node.type === "array") {
      const bad = loneSurrogate(child, `${path}[${i}]`);
      if (bad) return bad;
    }
  }
  return null;
}

// jsonc-parser's getNodeValue, kept local to avoid a second parse.
function nodeValue(node: import("jsonc-parser").Node): unknown {
  switch (node.type) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const p of node.children ?? []) {
        // defineProperty: a "__proto__" key stays a plain key (strict schemas then report it as unknown).
        Object.defineProperty(out, p.children![0].value as string, {
          value: nodeValue(p.children![1]),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return out;
    }
    case "array":
      return (node.children ?? []).map(nodeValue);
    default:
      return node.value;
  }
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** The 1-based line of the first byte that is not valid UTF-8. */
function badUtf8Line(bytes: Uint8Array): number {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i <= bytes.length; i++) {
    if (i === bytes.length || bytes[i] === 10) {
      try {
        strictUtf8.decode(bytes.subarray(lineStart, i));
      } catch {
        return line;
      }
      line++;
      lineStart = i + 1;
    }
  }
  return 1;
}

/**
 * The text of a JSONC file without a leading BOM. A missing or unreadable
 * file, and bytes that are not valid UTF-8, are usage errors naming it.
 */
/** The bytes of a regular file (a FIFO, device, directory: a usage error), refused over noema's line limit. */
function readRegularText(path: string): Uint8Array {
  let fd: number;
  try {
    fd = openRegularFile(path);
  } catch (e) {
    if (e instanceof NoemaError) throw new NoemaError(e.code, e.detail, { file: path, exitCode: EXIT.USAGE });
    throw e;
  }
  try {
    // Whatever it holds is recorded in the start event's line: a larger file is refused before it is read.
    const size = fstatSync(fd).size, { lineBytes } = limits();
    if (size > lineBytes) {
      throw new NoemaError(
        "too_large",
        `${size} bytes, over noema's limit of ${lineBytes} bytes (NOEMA_MAX_LINE_BYTES)`,
        {
          file: path,
          exitCode: EXIT.USAGE,
        },
      );
    }
    return readFromStart(fd, size);
  } finally {
    closeSync(fd);
  }
}

function readJsoncText(path: string): string {
  let text: string;
  try {
    // Opened without blocking and checked first: a FIFO or a device is "not a regular file", never waited on.
    const bytes = readRegularText(path);
    try {
      text = strictUtf8.decode(bytes);
    } catch {
      throw new NoemaError("bad_utf8", "not valid UTF-8", {
        file: path,
        line: badUtf8Line(bytes),
        exitCode: EXIT.USAGE,
      });
    }
  } catch (e) {
    if (e instanceof NoemaError) throw e;
    const code = (e as { code?: string }).code;
    throw new NoemaError("not_found", code === "ENOENT" ? "file not found" : `cannot read: ${(e as Error).message}`, {
      file: path,
      exitCode: EXIT.USAGE,
    });
  }
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/**
 * Reads and parses a JSONC file (see {@link parseJsonc}).
 *
 * @example
 * ```ts
 * import { parseJsoncFile } from "noema";
 * const script = parseJsoncFile("examples/script.jsonc");
 * ```
 */
export function parseJsoncFile(path: string): unknown {
  const text = readJsoncText(path);
  return parseJsonc(text, path);
}

/**
 * The line of the member at `segments` (its key's line) in parsed JSONC
 * `text`, or undefined when there is none.
 *
 * @example
 * ```ts
 * import { keyLine } from "./jsonc.ts";
 * keyLine('{\n  "adapter": {\n    "timout_ms": 5\n  }\n}', ["adapter", "timout_ms"]); // 3
 * ```
 */
export function keyLine(text: string, segments: readonly (string | number)[]): number | undefined {
  const tree = parseTree(text, [], { allowTrailingComma: true });
  const node = tree === undefined ? undefined : findNodeAtLocation(tree, [...segments]);
  const at = node?.parent?.type === "property" ? node.parent.offset : node?.offset;
  return at === undefined ? undefined : lineCol(text, at).line;
}

/**
 * What to say of a key an object does not know: a did-you-mean when one of
 * `known` is close, else the known keys (when they are known).
 *
 * @example
 * ```ts
 * import { unknownKeyMessage } from "./jsonc.ts";
 * unknownKeyMessage("input", ["kind", "inputs"]); // 'unknown key (did you mean "inputs"?)'
 * ```
 */
export function unknownKeyMessage(key: string, known: readonly string[] | undefined): string {
  const hint = known === undefined ? undefined : didYouMean(key, known);
  if (hint !== undefined) return `unknown key (did you mean "${hint}"?)`;
  return known === undefined ? "unknown key" : `unknown key; known keys: ${known.join(", ")}`;
}

/**
 * Reads a JSONC file and validates it against a strict object schema. Errors
 * name the file, the line of the offending field, the field and the problem;
 * an unknown key, at any depth, gets a did-you-mean suggestion.
 *
 * @example
 * ```ts
 * import { readSettingsFile, TaskFile } from "noema";
 * const task = readSettingsFile("examples/safe-shell.jsonc", TaskFile);
 * ```
 */
export function readSettingsFile<S extends v.GenericSchema & { entries: Record<string, unknown> }>(
  path: string,
  schema: S,
): v.InferOutput<S> {
  const text = readJsoncText(path);
  const value = parseJsonc(text, path);
  // A missing field has no line of its own: the line of the nearest member that is there (its object).
  const lineOf = (segments: (string | number)[]) => {
    for (let n = segments.length; n > 0; n--) {
      const line = keyLine(text, segments.slice(0, n));
      if (line !== undefined) return line;
    }
    return undefined;
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new NoemaError("bad_settings", "expected a JSON object", { file: path, line: 1, exitCode: EXIT.USAGE });
  }
  const known = Object.keys(schema.entries);
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw new NoemaError("unknown_key", unknownKeyMessage(key, known), {
        file: path,
        line: lineOf([key]),
        field: key,
        exitCode: EXIT.USAGE,
      });
    }
  }
  const r = v.safeParse(schema, value);
  if (!r.success) {
    const issue = r.issues[0];
    const segments = (issue.path ?? []).map((p) => (p as { key: string | number }).key);
    if (isUnknownKeyIssue(issue)) {
      throw new NoemaError("unknown_key", unknownKeyMessage(String(issue.input), knownKeysAt(schema, issue)), {
        file: path,
        line: lineOf(segments),
        field: issuePath(issue),
        exitCode: EXIT.USAGE,
      });
    }
    const [problem] = toProblems([issue]);
    throw new NoemaError("bad_settings", problem.message, {
      file: path,
      line: lineOf(segments),
      field: issuePath(issue) || undefined,
      exitCode: EXIT.USAGE,
    });
  }
  return r.output;
}
