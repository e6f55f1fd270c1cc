/**
 * Errors and exit codes. Every error noema raises on purpose is a
 * {@link NoemaError}: it says what is wrong and where (file, line, field), and
 * carries the exit code the CLI uses.
 *
 * @module
 */

/**
 * Exit codes of the `noema` CLI. Stable: scripts may depend on them.
 *
 * @example
 * ```ts
 * import { EXIT } from "noema";
 * if (code === EXIT.VETOED) console.log("a policy vetoed the run");
 * ```
 */
export const EXIT = {
  /** Success; for `validate`, every artifact is valid. */
  OK: 0,
  /** An error, or `validate` found problems. */
  ERROR: 1,
  /** Bad command-line usage or bad input (task file, options). */
  USAGE: 2,
  /** The run was vetoed by a policy or by governance. */
  VETOED: 3,
  /** The run paused, waiting for approval. */
  PAUSED: 4,
} as const;
/** An exit code. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Where an error happened. */
export interface ErrorLocation {
  /** The file, when a file is at fault. */
  file?: string;
  /** 1-based line in that file. */
  line?: number;
  /** Dotted field path. */
  field?: string;
}

/**
 * An error with a location and an exit code. Its message starts with the
 * location, e.g. `events.jsonl:3: payload.outcome: expected string, got number`.
 *
 * @example
 * ```ts
 * import { NoemaError } from "noema";
 * throw new NoemaError("not_found", "episode ep_1 not found under .noema/episodes", { exitCode: 1 });
 * ```
 */
export class NoemaError extends Error {
  /** A short stable code, e.g. `not_found`, `invalid_id`, `bad_json`. */
  readonly code: string;
  /** Exit code for the CLI. */
  readonly exitCode: ExitCode;
  /** Where it happened. */
  readonly location: ErrorLocation;
  /** The message without the location prefix. */
  readonly detail: string;

  constructor(code: string, message: string, options: ErrorLocation & { exitCode?: ExitCode; cause?: unknown } = {}) {
    const { exitCode = EXIT.ERROR, cause, ...location } = options;
    super(formatLocated(location, message), cause === undefined ? undefined : { cause });
    this.name = "NoemaError";
    this.code = code;
    this.exitCode = exitCode;
    this.location = location;
    this.detail = message;
  }
}

/**
 * Prefixes a message with `file:line: field: `, omitting the parts not known.
 *
 * @example
 * ```ts
 * import { formatLocated } from "./errors.ts";
 * formatLocated({ file: "a.json", field: "x" }, "bad"); // "a.json: x: bad"
 * ```
 */
export function formatLocated(location: ErrorLocation, message: string): string {
  let prefix = "";
  if (location.file) prefix = location.line ? `${location.file}:${location.line}: ` : `${location.file}: `;
  if (location.field) prefix += `${location.field}: `;
  return prefix + message;
}
