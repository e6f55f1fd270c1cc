/**
 * Verification: assertions about a workspace, snapshots of it before and
 * after a run, their diff, the `summary.json` `verification` block and the
 * run `outcome`. Standalone: it does not depend on the runtime.
 *
 * Typical use by a runtime (two calls around the actions):
 * 1. `parseAssertions(list, source)` when reading options (usage errors,
 *    exit code 2), optionally `loadAssertionPlugins(specs, baseDir)`;
 * 2. `startVerification({workspace, specs, policy, episodeDir})` before the
 *    first action (writes `snapshots/pre.json`);
 * 3. `session.finish()` after the last action (writes `snapshots/post.json`,
 *    returns `verification`);
 * 4. `computeOutcome(adapterResult, verification)`.
 *
 * @example
 * ```ts
 * import { computeOutcome, parseAssertions, snapshotPolicy, startVerification } from "./mod.ts";
 * const specs = parseAssertions([{ kind: "no_modifications" }], "verify.jsonc");
 * const session = await startVerification({ workspace: ".", specs, policy: snapshotPolicy(), episodeDir: "/tmp/ep" });
 * const verification = await session.finish();
 * console.log(computeOutcome("success", verification)); // "success"
 * ```
 *
 * @module
 */
export {
  type CaptureOptions,
  captureSnapshot,
  comparePaths,
  DEFAULT_IGNORE,
  diffSnapshots,
  isIgnored,
  readSnapshot,
  type Snapshot,
  snapshotJson,
  type SnapshotPolicy,
  snapshotPolicy,
  SnapshotSchema,
  WorkspaceUnavailableError,
  writeSnapshot,
} from "./snapshot.ts";
export {
  ASSERTION_KINDS,
  type AssertionContext,
  type AssertionKind,
  AssertionList,
  type AssertionPluginContext,
  type AssertionPluginModule,
  type AssertionPluginResult,
  AssertionSpec,
  CommandSucceedsSpec,
  DEFAULT_COMMAND_TIMEOUT_MS,
  evaluateAssertions,
  FileAbsentSpec,
  FileContainsSpec,
  FileExistsSpec,
  jsonEqual,
  JsonEqualsSpec,
  loadAssertionPlugin,
  loadAssertionPlugins,
  MAX_READ_BYTES,
  NoModificationsSpec,
  OnlyModifiedSpec,
  parseAssertions,
  type ParseOptions,
  PluginSpec,
  resolvePointer,
} from "./assertions.ts";
export {
  buildVerification,
  computeOutcome,
  notProvidedVerification,
  outcomeSuccess,
  SNAPSHOT_PATHS,
  startVerification,
  type StartVerificationOptions,
  type VerificationParts,
  type VerificationSession,
  WORKSPACE_UNAVAILABLE,
} from "./outcome.ts";
