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
  /** `resume`: the run is terminal (sealed by its manifest); nothing to resume. */
  SEALED: 5,
  /** `resume`/`approve`: no pending checkpoint, or (resume) no decision recorded for it. */
  NO_CHECKPOINT: 6,
  /** `resume`: state.json or events.jsonl no longer match the checkpoint (hash, offset, last event id). */
  MISMATCH: 7,
  /** `approve`/`reject`/`resume`: the decision was already made or already consumed. */
  CONSUMED: 8,
  /** `resume`: a different adapter or plugin than the paused run used. */
  PLUGIN_MISMATCH: 9,
  /** Another process holds the episode's lock. */
  LOCKED: 10,
  /**
   * No space left on the device (ENOSPC, or a quota: EDQUOT) while writing: the run stopped where it was, its
   * episode resumable (`noema resume` once there is space).
   */
  DISK_FULL: 11,
  /** The run was interrupted (Ctrl-C / SIGINT, SIGTERM) and ended aborted: 128 + SIGINT, as shells do. */
  INTERRUPTED: 130,
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
