/**
 * `noema approve`, `noema reject` and `noema resume`: decide on a paused run
 * and continue it in the same episode directory, or recover a crashed one.
 *
 * @module
 */
import { exitProcess } from "../../plugins/exit_guard.ts";
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import process from "node:process";
import { EXIT, NoemaError } from "../../errors.ts";
import { resume } from "../../drivers.ts";
import { approve, pendingCheckpoint, reject, type ResumeOptions } from "../../runtime/resume.ts";
import type { RunResult } from "../../runtime/engine.ts";
import { stoppedForSpace, usageError } from "../errors.ts";
import { publishedTo } from "../../shared_store/published.ts";
import { pulledCopy } from "../../shared_store/pulled.ts";
import { basename } from "node:path";
import { episodeRoot } from "../../store/nofollow.ts";
import { storeUrlOf, withStore } from "../store_option.ts";
import { applyStoreDecision, decideInStore, localPending, refuseUnbackedDecision } from "../store_approvals.ts";
import { ArtifactSink } from "../../runtime/artifact_sink.ts";
import { deciderOf, readApproval } from "../../runtime/checkpoint.ts";
import { oneLine } from "../output.ts";
import { deciderText } from "../../shared_store/shared_store.ts";
import { locateEpisode, resolveRoot } from "../../store/layout.ts";
import { claimForResume, withLivePublishing } from "../store_publish.ts";
import { refusePulledCopy } from "../../shared_store/claim.ts";
import { liveOtelFor, otelSettingsOf } from "../otel_option.ts";
import { joinNotices } from "../../export/otel/run_hooks.ts";
import { resolveEpisodeRef } from "../episode_ref.ts";
import { episodeUsing } from "../../agents/driver.ts";
import { calledAs } from "../../called_as.ts";
import { printRunResult } from "../run_result.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";

const FAIL_CLOSED = "\nExit codes: 5 the run is terminal (sealed), 6 no pending checkpoint or no decision yet, " +
  "7 state.json or events.jsonl changed since the checkpoint, 8 already decided or the decision was already used, " +
  "9 a different adapter or plugin than the paused run's, 10 another process holds the episode's lock.\n";

/**
 * Refuses (exit 2) to decide on or resume, without a store, a run published to one (`state/published/<id>`): the
 * store keeps the fleet's one decision on it, and a decision taken here alone could contradict it.
 */
function refuseWithoutStore(ref: string, g: { root?: string }, doing: string): void {
  const dir = locateEpisode(ref, g).dir;
  const id = basename(dir);
  const pulled = pulledCopy(episodeRoot(dir), id);
  if (pulled !== null) {
    // A copy is not held here: the root that holds the run applies the store's decisions; one made here alone
    // would never be applied, nor be the fleet's.
    throw usageError(
      `${id} is a copy pulled from ${pulled.store ?? "a shared store"}, which keeps the fleet's one decision on it ` +
        `(the root that holds the run applies it): ${doing} through that store (--store or NOEMA_STORE), not here ` +
        "alone",
    );
  }
  const store = publishedTo(episodeRoot(dir), id);
  if (store === null) return;
  throw usageError(
    `${id} is published to ${store}, which keeps the fleet's one decision on it: ${doing} through that store ` +
      `(--store or NOEMA_STORE), not here alone`,
  );
}

/** Runs `work` with Ctrl-C / SIGTERM turned into an abort; `interrupted` tells whether one came. */
async function withSignals<T>(
  ctx: CliContext,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<{ value: T; interrupted: boolean }> {
  const controller = new AbortController();
  let interrupts = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    if (++interrupts > 1) exitProcess(EXIT.INTERRUPTED);
    ctx.out.note(`noema: ${sig}: stopping the run and the action running (again to quit at once)`);
    controller.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    return { value: await work(controller.signal), interrupted: interrupts > 0 };
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/**
 * Resumes `ref` with Ctrl-C handling, publishing it live when a shared store is configured (approve --resume,
 * resume).
 */
async function resumePublished(
  ctx: CliContext,
  cmd: CommandUnknownOpts,
  ref: string,
  options: Omit<ResumeOptions, "signal" | "onEvent" | "notices">,
): Promise<{ value: RunResult; interrupted: boolean }> {
  const g = globalOptions(cmd);
  const id = locateEpisode(ref, g).id;
  const pick = storeUrlOf(cmd);
  // One root continues a run, fleet-wide: claimed in the store before anything runs.
  if (pick !== null) await claimForResume(ctx.out, resolveRoot(g), pick, id);
  else refusePulledCopy(resolveRoot(g), id, null);
  const otel = liveOtelFor(otelSettingsOf(cmd, ctx.out), g.root, ctx.out, id);
  return withSignals(
    ctx,
    async (signal) => {
      try {
        return await withLivePublishing(
          ctx.out,
          resolveRoot(g),
          storeUrlOf(cmd),
          id,
          (hooks) =>
            resume(ref, {
              ...options,
              signal,
              onEvent: (e) => {
                hooks.onEvent?.(e);
                otel?.onEvent(e);
              },
              notices: joinNotices(hooks.notices, otel?.notices),
            }),
        );
      } catch (e) {
        throw stoppedForSpace(e, id);
      } finally {
        await otel?.finish(id);
      }
    },
  );
}

function registerDecision(program: CommandUnknownOpts, ctx: CliContext, name: "approve" | "reject"): void {
  program
    .command(name)
    .summary(
      name === "approve" ? "approve the pending action of a paused run" : "reject the pending action of a paused run",
    )
    .description(
      `Record a decision (${
        name === "approve" ? "approved" : "rejected"
      }) bound to the run's pending checkpoint and its state_hash, ` +
        `in approvals/<checkpoint_id>.json. A checkpoint takes one decision. With --resume, continue the run at once.`,
    )
    .argument("<episode>", "episode id, unique id prefix, 'last', or path to an episode directory")
    .option("--note <text>", "why")
    .option(
      "--by <name>",
      "a display name, recorded as claimed_by beside the authenticated decider (the store's database role, else " +
        "the OS user)",
    )
    .option(
      "--checkpoint <id>",
      "decide only if the run still waits on this checkpoint (as `noema approvals` or `view` showed it); another: " +
        "exit 7, nothing recorded",
    )
    .option("--resume", "continue the run after recording the decision")
    .option("--json", "print the decision (and, with --resume, the run's result) as JSON")
    .addHelpText(
      "after",
      examples(
        [`noema ${name} ep_01K9RBBMXXRSFWR49SXFGF4SPR --note "checked the diff"`, "record the decision"],
        [`noema ${name} ep_01K9… --resume`, "decide and continue the same run"],
        [`noema ${name} ep_01K9… --checkpoint chk_0123456789ab`, "only the call you saw (not one that came after it)"],
      ) + FAIL_CLOSED,
    )
    .action(async (episode, opts, cmd) => {
      const g = globalOptions(cmd);
      const ref = resolveEpisodeRef(episode, g);
      if (opts.resume) refuseGatewayResume(ref, g); // before anything is recorded
      // Bound to the checkpoint the decider saw, when they name it.
      const seen = opts.checkpoint !== undefined ? { checkpointId: opts.checkpoint } : {};
      const store = storeUrlOf(cmd);
      if (store !== null) {
        // The store arbitrates: one decision per checkpoint across the fleet; the run's holder applies it.
        const d = await withStore(cmd, (s) =>
          decideInStore(
            s,
            ref,
            {
              decision: name === "approve" ? "approved" : "rejected",
              note: opts.note,
              by: opts.by,
              ...seen,
            },
            g,
            (line) => ctx.out.note(line),
          ), { scoped: true });
        if (opts.json && !opts.resume) ctx.out.json(d);
        else if (!opts.resume) {
          ctx.out.line(
            `${d.episode_id}  ${d.decision} by ${
              oneLine(deciderText(d))
            }  (checkpoint ${d.checkpoint_id}, in the store)`,
          );
        }
        if (!opts.resume) return;
        if (localPending(ref, g) === null) {
          // Recorded for the fleet; run where the run is held (a pulled copy here is never resumed).
          const holder = (await withStore(cmd, (s) => s.get(d.episode_id)).catch(() => null))?.host ?? null;
          const where = holder ? `host ${holder}` : "the machine that holds it";
          if (opts.json) ctx.out.json({ ...d, resumed: false, held_by: holder });
          else {
            ctx.out.line(
              `${d.episode_id}  ${d.decision} by ${
                oneLine(deciderText(d))
              }  (checkpoint ${d.checkpoint_id}, in the store)`,
            );
            ctx.out.note(`noema: ${d.episode_id} is not held here: ${where} applies the decision and runs it`);
          }
          return;
        }
      }
      if (store === null) refuseWithoutStore(ref, g, `${name === "approve" ? "approve" : "reject"} it`);
      const decided = store !== null
        ? pendingCheckpoint(ref, g).approval!
        : (name === "approve" ? approve : reject)(ref, {
          ...g,
          note: opts.note,
          by: opts.by,
          ...seen,
        });
      // Printed as recorded: secrets in the note or the name are masked.
      const record = ArtifactSink.forEpisode(locateEpisode(ref, g).dir).mask(decided);
      if (!opts.resume) {
        if (opts.json) ctx.out.json(record);
        else {ctx.out.line(
            `${record.episode_id}  ${record.decision} by ${
              oneLine(deciderOf(record))
            }  (checkpoint ${record.checkpoint_id})`,
          );}
        return;
      }
      if (!opts.json) {
        ctx.out.note(`${record.decision} by ${oneLine(deciderOf(record))}; resuming ${record.episode_id}`);
      }
      let r: Awaited<ReturnType<typeof resumePublished>>;
      try {
        r = await resumePublished(ctx, cmd, ref, { ...g });
      } catch (e) {
        // The run waiting for this decision (`run --wait`) took it first: the decision applied, the run went on there.
        if (!(e instanceof NoemaError && e.exitCode === EXIT.SEALED) || !appliedElsewhere(ref, g, record)) throw e;
        if (opts.json) ctx.out.json({ ...record, resumed: false, resumed_by_another_process: true });
        else {ctx.out.note(
            `noema: ${record.episode_id}: the process waiting for this decision resumed it (${e.detail})`,
          );}
        return;
      }
      printRunResult(ctx, r.value, { json: opts.json, root: g.root, interrupted: r.interrupted });
    });
}

/**
 * `--resume` of an MCP gateway's episode: the gateway waiting for the call applies a decision itself, and no other
 * process can run the call (the gateway's connection to its server is gone with it). Refused before anything is
 * recorded, saying what to do instead.
 */
function refuseGatewayResume(ref: string, g: { root?: string }): void {
  let dir: string;
  try {
    dir = locateEpisode(ref, g).dir;
  } catch {
    return; // not here: the decision says why
  }
  if (episodeUsing(dir) !== "mcp") return;
  const id = basename(dir);
  throw new NoemaError(
    "usage",
    `episode ${id} is an MCP gateway's: decide without --resume (the gateway waiting for the call applies the ` +
      `decision); if that gateway is gone, nothing can make the call: end the episode with ` +
      `${calledAs()} resume --abort ${id}`,
    { exitCode: EXIT.USAGE },
  );
}

/** Whether the decision `record` was consumed by a resume (another process's: this one's failed to start). */
function appliedElsewhere(ref: string, g: { root?: string }, record: { checkpoint_id: string }): boolean {
  try {
    return readApproval(locateEpisode(ref, g).dir, record.checkpoint_id)?.consumed_at != null;
  } catch {
    return false;
  }
}

/** Registers `noema approve` and `noema reject`. */
export function registerApproval(program: CommandUnknownOpts, ctx: CliContext): void {
  registerDecision(program, ctx, "approve");
  registerDecision(program, ctx, "reject");
}

/** Registers `noema resume`. */
export function registerResume(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("resume")
    .summary("continue a paused or crashed run in the same episode directory")
    .description(
      "Continue a run: after approve/reject for a paused run (the approved action runs, or the rejected step is vetoed), " +
        "or after a crash (from the first step the event log does not show finished; a program that outlived the crashed run " +
        "is stopped first, and the action that was running runs again unless --no-retry). --abort ends it as aborted with terminal artifacts.",
    )
    .argument("<episode>", "episode id, unique id prefix, 'last', or path to an episode directory")
    .option("--abort", "end the run as aborted, with terminal artifacts")
    .option(
      "--no-retry",
      "after a crash, fail the step whose action was running instead of running it again (exit 1)",
    )
    .option("--using <adapter>", "the adapter; must be the one the run used")
    .option(
      "--json",
      'print {"episode_id", "episode_dir", "status", "outcome", "exit_code", "blocked", "error", "program_exit_code", "message", "answer"}',
    )
    .addHelpText(
      "after",
      examples(
        ["noema resume ep_01K9RBBMXXRSFWR49SXFGF4SPR", "continue after a decision, or after a crash"],
        ["noema resume ep_01K9… --abort", "give up: status aborted, summary and manifest written"],
        ["noema resume ep_01K9… --no-retry", "after a crash: do not run the interrupted action again (status error)"],
      ) + FAIL_CLOSED,
    )
    .action(async (episode, opts, cmd) => {
      const g = globalOptions(cmd);
      const ref = resolveEpisodeRef(episode, g);
      // A paused run's decision is the store's; a crashed one may go on without it (it publishes nothing then).
      if (!opts.abort && storeUrlOf(cmd) === null && localPending(ref, g) !== null) {
        refuseWithoutStore(ref, g, "resume it");
      }
      if (!opts.abort && storeUrlOf(cmd) !== null && localPending(ref, g) !== null) {
        // The store's decision is applied here, where the run is held; one made here without the store does not count.
        await withStore(cmd, async (s) => {
          if (!(await applyStoreDecision(s, ref, g, (line) => ctx.out.note(line)))) {
            refuseUnbackedDecision(ref, g, s.location);
          }
        });
      }
      const r = await resumePublished(ctx, cmd, ref, { ...g, abort: opts.abort, retry: opts.retry, using: opts.using });
      printRunResult(ctx, r.value, { json: opts.json, root: g.root, interrupted: r.interrupted });
    });
}
