/**
 * `noema run … --wait [DURATION]` with a shared store: a run that pauses for
 * approval waits for a decision made on any machine instead of exiting 4,
 * then resumes the same episode (publishing and exporting as it goes), as often as it
 * pauses. When the wait runs out, `--approval-timeout` applies: `deny`
 * rejects the call (decided by `timeout`), `abort` ends the run aborted.
 * Outages of the store are waited out (said once on stderr, and once when it
 * is back); a wait that runs out while the store cannot be reached decides
 * nothing: it says why and leaves the run paused (exit 4).
 *
 * @module
 */
import { resume } from "../drivers.ts";
import { joinNotices, type LiveOtelExport } from "../export/otel/run_hooks.ts";
import type { RunResult } from "../runtime/engine.ts";
import { openSharedStore } from "../shared_store/open.ts";
import { keepLease } from "../shared_store/lease_keeper.ts";
import { EXIT, NoemaError } from "../errors.ts";
import type { CliContext } from "./context.ts";
import { waitForDecision, WaitUnreachableError } from "./store_approvals.ts";
import { startLivePublishing } from "./store_publish.ts";
import { calledAs } from "../called_as.ts";

/** What {@link waitAndResume} needs. */
export interface WaitOptions {
  /** The store. */
  store: { url: string; from: string };
  /** The absolute root. */
  root: string;
  /** Longest wait for one decision, ms. */
  timeoutMs: number;
  /** What a wait that runs out does. */
  onTimeout: "deny" | "abort";
  /** Ctrl-C. */
  signal: AbortSignal;
  /** Passed on to the resumed run (progress lines). */
  onEvent?: (e: { phase: string; payload: Record<string, unknown> }) => void;
  /** Starts the live OpenTelemetry export of a resume of `episodeId` (when the run exports: `--otel`, `OTEL_*`). */
  otel?: (episodeId: string) => LiveOtelExport | null;
}

/**
 * While `result` is paused: waits for a decision, applies it, resumes.
 * Returns the last result (still paused when interrupted, or when the wait
 * ran out while the store could not be reached: said on stderr).
 *
 * @example
 * ```ts
 * result = await waitAndResume(ctx, result, { store, root, timeoutMs: 600_000, onTimeout: "deny", signal });
 * ```
 */
export async function waitAndResume(ctx: CliContext, first: RunResult, o: WaitOptions): Promise<RunResult> {
  let result = first;
  const store = await openSharedStore(o.store.url, o.store.from);
  try {
    while (result.status === "pending" && !o.signal.aborted) {
      const p = result.pending;
      ctx.out.note(
        `noema: ${result.episode_id} waits for approval of ${p?.step_id ?? "a step"}: ${p?.reason ?? ""}; ` +
          `decide on any machine: ${calledAs()} approve|reject ${result.episode_id} --store …`,
      );
      // The run stays this root's while it waits: its lease is renewed, so a resume elsewhere is refused.
      const waiting = new AbortController();
      const stopWaiting = () => waiting.abort();
      o.signal.addEventListener("abort", stopWaiting);
      const keeper = keepLease(store, result.episode_id, stopWaiting);
      let got: Awaited<ReturnType<typeof waitForDecision>> | "unreachable";
      try {
        got = await waitForDecision(
          store,
          result.episode_id,
          { root: o.root },
          o.timeoutMs,
          o.onTimeout,
          waiting.signal,
          (line) => ctx.out.note(line),
        ).catch((e) => {
          if (!(e instanceof WaitUnreachableError)) throw e;
          ctx.out.note(`noema: ${e.message}`);
          return "unreachable" as const;
        });
      } finally {
        keeper.stop();
        o.signal.removeEventListener("abort", stopWaiting);
      }
      if (keeper.lost) {
        throw new NoemaError(
          "held_elsewhere",
          `${result.episode_id} was taken over by ${keeper.lost.owner.host} (pid ${keeper.lost.owner.pid}) while ` +
            `this run waited (cut off from the store for over a minute?): the decision is applied there, not here`,
          { exitCode: EXIT.LOCKED },
        );
      }
      if (got === "interrupted" || got === "unreachable") break;
      const live = await startLivePublishing(ctx.out, o.root, o.store, result.episode_id);
      const otel = o.otel?.(result.episode_id) ?? null;
      try {
        result = await resume(result.episode_id, {
          root: o.root,
          abort: got === "abort",
          signal: o.signal,
          onEvent: (e) => {
            o.onEvent?.(e);
            live.onEvent(e);
            otel?.onEvent(e);
          },
          notices: joinNotices(live.notices, otel?.notices),
        });
      } finally {
        await live.finish(result.episode_id, result.status === "pending");
        await otel?.finish(result.episode_id);
      }
    }
    return result;
  } finally {
    await store.close().catch(() => {});
  }
}
