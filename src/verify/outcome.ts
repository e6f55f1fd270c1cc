/**
 * The `summary.json` `verification` block and the run `outcome`, plus
 * {@link startVerification}, which runs the whole verification of an episode
 * in two calls (before the first action and after the last).
 *
 * Outcome table ({@link computeOutcome}):
 *
 * | adapter_result | verification | outcome |
 * |---|---|---|
 * | `error` or `skipped` | anything | `error` |
 * | `success` | not provided | `success_unverified` |
 * | `success` | provided, `error` set (e.g. `workspace_unavailable`, `passed: null`) | `error` |
 * | `success` | provided, every assertion passed | `success` |
 * | `success` | provided, any assertion failed | `goal_not_achieved` |
 *
 * When assertions were given but the workspace was unavailable the outcome is
 * `error`, not `success_unverified`: the user asked for checks that could not
 * run, so a CI gate on the outcome must not pass (fail closed), and the
 * contract lists a non-null `verification.error` among the run-level error
 * signals. It is not `goal_not_achieved` either, since nothing showed the
 * goal was missed.
 *
 * @module
 */
import { join } from "node:path";
import process from "node:process";
import type { AdapterResult, AssertionResult, Outcome, Verification, WorkspaceDiff } from "../schema/summary.ts";
import { type AssertionSpec, evaluateAssertions } from "./assertions.ts";
import { episodeRoot } from "../store/nofollow.ts";
import {
  captureSnapshot,
  diffSnapshots,
  readSnapshot,
  type Snapshot,
  type SnapshotPolicy,
  snapshotPolicy,
  WorkspaceUnavailableError,
  writeSnapshot,
} from "./snapshot.ts";

/**
 * Snapshot paths relative to the episode directory, as recorded in
 * `verification.snapshots`.
 *
 * @example
 * ```ts
 * import { SNAPSHOT_PATHS } from "./outcome.ts";
 * SNAPSHOT_PATHS.pre; // "snapshots/pre.json"
 * ```
 */
export const SNAPSHOT_PATHS = Object.freeze({ pre: "snapshots/pre.json", post: "snapshots/post.json" });

/** The `verification.error` value when the workspace cannot be snapshotted. */
export const WORKSPACE_UNAVAILABLE = "workspace_unavailable";

/**
 * The exact "not provided" block: no assertions were given.
 *
 * @example
 * ```ts
 * import { notProvidedVerification } from "./outcome.ts";
 * notProvidedVerification();
 * // { provided: false, passed: null, assertions: [], workspace_diff: null, snapshots: null,
 * //   policy: { ignore: [".git", "node_modules", ".noema"], symlinks: "skip" }, error: null }
 * ```
 */
export function notProvidedVerification(policy: SnapshotPolicy = snapshotPolicy()): Verification {
  return {
    provided: false,
    passed: null,
    assertions: [],
    workspace_diff: null,
    snapshots: null,
    policy: { ignore: [...policy.ignore], symlinks: policy.symlinks },
    error: null,
  };
}

/** Input of {@link buildVerification}. */
export interface VerificationParts {
  /** Whether assertions were given. When false every other field is ignored. */
  provided: boolean;
  /** Results of `evaluateAssertions`, in spec order. */
  results: readonly AssertionResult[];
  /** The snapshot policy used. */
  policy: SnapshotPolicy;
  /** `diffSnapshots(pre, post)`, or null when either snapshot is unavailable. */
  diff: WorkspaceDiff | null;
  /** Whether both snapshot files were written under the episode directory. */
  snapshotsWritten: boolean;
  /** Verification error (e.g. `workspace_unavailable`), or null. */
  error: string | null;
}

/**
 * Builds `summary.json` `verification`. `passed` is true when every result
 * passed, false when any failed, and null when nothing was provided or
 * `error` is set. `snapshots` holds {@link SNAPSHOT_PATHS} when both files
 * were written, else null.
 *
 * @example
 * ```ts
 * import { buildVerification } from "./outcome.ts";
 * import { snapshotPolicy } from "./snapshot.ts";
 * buildVerification({
 *   provided: true,
 *   results: [{ name: "file_exists", target: "out.txt", passed: true, reason: null }],
 *   policy: snapshotPolicy(),
 *   diff: { added: ["out.txt"], modified: [], deleted: [] },
 *   snapshotsWritten: true,
 *   error: null,
 * }).passed; // true
 * ```
 */
export function buildVerification(parts: VerificationParts): Verification {
  if (!parts.provided) return notProvidedVerification(parts.policy);
  return {
    provided: true,
    passed: parts.error !== null ? null : parts.results.every((r) => r.passed),
    assertions: parts.results.map((r) => ({ ...r })),
    workspace_diff: parts.diff === null
      ? null
      : { added: [...parts.diff.added], modified: [...parts.diff.modified], deleted: [...parts.diff.deleted] },
    snapshots: parts.snapshotsWritten ? { ...SNAPSHOT_PATHS } : null,
    policy: { ignore: [...parts.policy.ignore], symlinks: parts.policy.symlinks },
    error: parts.error,
  };
}

/**
 * The run outcome from the adapter result and the verification block (see
 * the module's outcome table).
 *
 * @example
 * ```ts
 * import { computeOutcome, notProvidedVerification } from "./outcome.ts";
 * computeOutcome("success", notProvidedVerification()); // "success_unverified"
 * computeOutcome("error", notProvidedVerification()); // "error"
 * ```
 */
export function computeOutcome(
  adapterResult: AdapterResult,
  verification: Pick<Verification, "provided" | "passed" | "error">,
): Outcome {
  if (adapterResult !== "success") return "error";
  if (!verification.provided) return "success_unverified";
  if (verification.error != null || verification.passed === null) return "error";
  return verification.passed ? "success" : "goal_not_achieved";
}

/**
 * `metrics.success` for an outcome: 1 for `success` and
 * `success_unverified`, else 0.
 *
 * @example
 * ```ts
 * import { outcomeSuccess } from "./outcome.ts";
 * outcomeSuccess("goal_not_achieved"); // 0
 * ```
 */
export function outcomeSuccess(outcome: Outcome): 0 | 1 {
  return outcome === "success" || outcome === "success_unverified" ? 1 : 0;
}

/** Options of {@link startVerification}. */
export interface StartVerificationOptions {
  /** The workspace; null or absent when none was given. */
  workspace?: string | null;
  /** Parsed assertions (`parseAssertions`); empty means "not provided". */
  specs: readonly AssertionSpec[];
  /** Snapshot policy. @default {snapshotPolicy()} */
  policy?: SnapshotPolicy;
  /** The episode directory; snapshots go to `<episodeDir>/snapshots/`. */
  episodeDir: string;
  /** Directory plugin paths are resolved against. @default {process.cwd()} */
  baseDir?: string;
  /** Progress of a snapshot capture: which one, and the files hashed so far. */
  onProgress?: (snapshot: "pre" | "post", files: number) => void;
  /**
   * Masks secrets in what verification writes and returns: the snapshot
   * files (workspace paths) and the `verification` block (assertion targets
   * and reasons, diff paths). An episode's `ArtifactSink.mask`.
   * @default {no masking}
   */
  redact?: <T>(value: T) => T;
  /**
   * Continue a verification begun by an earlier process (a resumed run): read
   * `snapshots/pre.json` instead of capturing it.
   * @default {false}
   */
  resume?: boolean;
}

/** A verification in progress: the pre snapshot is taken. */
export interface VerificationSession {
  /** The pre snapshot, or null (not provided, or workspace unavailable). */
  readonly pre: Snapshot | null;
  /** Why the pre snapshot is missing, when the workspace was unavailable. */
  readonly preError: WorkspaceUnavailableError | null;
  /**
   * Captures the post snapshot, writes it, diffs, evaluates the assertions
   * and returns the `verification` block. Never throws for workspace
   * problems: they become `error: "workspace_unavailable"`.
   */
  finish(): Promise<Verification>;
}

/**
 * Starts the verification of an episode: call it before the first action,
 * then `finish()` after the last. With no specs nothing is captured and
 * `finish()` returns the "not provided" block. Otherwise it captures and
 * writes `snapshots/pre.json`; `finish()` captures and writes
 * `snapshots/post.json`, diffs, evaluates and builds the block. A missing
 * workspace (or none given) or an unreadable one gives `passed: null` and
 * `error: "workspace_unavailable"`, with the assertions still evaluated as
 * far as possible (mostly `snapshot_unavailable`).
 *
 * @example
 * ```ts
 * import { computeOutcome, parseAssertions, startVerification } from "./mod.ts";
 * const specs = parseAssertions([{ kind: "file_exists", path: "out.txt" }], "verify.jsonc");
 * const session = await startVerification({ workspace: "ws", specs, episodeDir: ".noema/episodes/ep_1" });
 * // ... the agent acts ...
 * const verification = await session.finish();
 * const outcome = computeOutcome("success", verification);
 * ```
 */
export async function startVerification(options: StartVerificationOptions): Promise<VerificationSession> {
  const policy = options.policy ?? snapshotPolicy();
  const specs = [...options.specs];
  const workspace = options.workspace ?? null;
  if (specs.length === 0) {
    return { pre: null, preError: null, finish: () => Promise.resolve(notProvidedVerification(policy)) };
  }
  const snapDir = options.episodeDir;
  const redact = options.redact ?? (<T>(value: T): T => value);
  const capture = async (path: string): Promise<Snapshot | WorkspaceUnavailableError> => {
    if (workspace === null) return new WorkspaceUnavailableError("(none given)", "", "no_workspace");
    try {
      const which = path === SNAPSHOT_PATHS.pre ? "pre" : "post";
      const snap = await captureSnapshot(workspace, policy, {
        onProgress: options.onProgress ? (n) => options.onProgress!(which, n) : undefined,
      });
      writeSnapshot(join(snapDir, path), redact(snap), episodeRoot(snapDir));
      return snap;
    } catch (e) {
      if (e instanceof WorkspaceUnavailableError) return e;
      throw e;
    }
  };
  const readPre = (): Snapshot | WorkspaceUnavailableError => {
    try {
      return readSnapshot(join(snapDir, SNAPSHOT_PATHS.pre));
    } catch (e) {
      return new WorkspaceUnavailableError(
        workspace ?? "(none given)",
        SNAPSHOT_PATHS.pre,
        (e as { code?: string }).code ?? "unreadable",
      );
    }
  };
  const first = options.resume ? readPre() : await capture(SNAPSHOT_PATHS.pre);
  const pre = first instanceof WorkspaceUnavailableError ? null : first;
  const preError = first instanceof WorkspaceUnavailableError ? first : null;
  let done: Promise<Verification> | null = null;
  return {
    pre,
    preError,
    finish() {
      done ??= (async () => {
        const second = await capture(SNAPSHOT_PATHS.post);
        const post = second instanceof WorkspaceUnavailableError ? null : second;
        // A resumed run reads the pre snapshot as written (paths masked): compare it with a masked post.
        const diff = pre === null || post === null
          ? null
          : options.resume
          ? diffSnapshots(redact(pre), redact(post))
          : diffSnapshots(pre, post);
        const results = await evaluateAssertions(specs, {
          workspace,
          pre,
          post,
          diff,
          baseDir: options.baseDir ?? process.cwd(),
        });
        return redact(buildVerification({
          provided: true,
          results,
          policy,
          diff,
          snapshotsWritten: pre !== null && post !== null,
          error: pre === null || post === null ? WORKSPACE_UNAVAILABLE : null,
        }));
      })();
      return done;
    },
  };
}
