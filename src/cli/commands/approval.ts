/**
 * `noema approve`, `noema reject` and `noema resume`: decide on a paused run
 * and continue it in the same episode directory, or recover a crashed one.
 *
 * @module
 */
import { exitProcess } from "../../plugins/exit_guard.ts";
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import process from "node:process";
import { EXIT } from "../../errors.ts";
import { approve, reject, resume } from "../../runtime/resume.ts";
import { ArtifactSink } from "../../runtime/artifact_sink.ts";
import { locateEpisode } from "../../store/layout.ts";
import { resolveEpisodeRef } from "../episode_ref.ts";
import { printRunResult } from "../run_result.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";

const FAIL_CLOSED = "\nExit codes: 5 the run is terminal (sealed), 6 no pending checkpoint or no decision yet, " +
  "7 state.json or events.jsonl changed since the checkpoint, 8 already decided or the decision was already used, " +
  "9 a different adapter or plugin than the paused run's, 10 another process holds the episode's lock.\n";

/** Runs `work` with Ctrl-C / SIGTERM turned into an abort; `interrupted` tells whether one came. */
async function withSignals<T>(
  ctx: CliContext,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<{ value: T; interrupted: boolean }> {
  const controller = new AbortController();
  let interrupts = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    if (++interrupts > 1) exitProcess(EXIT.INTERRUPTED);
    ctx.out.note(`noema: ${sig}: stopping after the current action (again to quit at once)`);
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
    .option("--by <name>", "who decides (default: the OS user name)")
    .option("--resume", "continue the run after recording the decision")
    .option("--json", "print the decision (and, with --resume, the run's result) as JSON")
    .addHelpText(
      "after",
      examples(
        [`noema ${name} ep_01K9RBBMXXRSFWR49SXFGF4SPR --note "checked the diff"`, "record the decision"],
        [`noema ${name} ep_01K9… --resume`, "decide and continue the same run"],
      ) + FAIL_CLOSED,
    )
    .action(async (episode, opts, cmd) => {
      const g = globalOptions(cmd);
      const ref = resolveEpisodeRef(episode, g);
      const decided = (name === "approve" ? approve : reject)(ref, { ...g, note: opts.note, by: opts.by });
      // Printed as recorded: secrets in the note or the name are masked.
      const record = ArtifactSink.forEpisode(locateEpisode(ref, g).dir).mask(decided);
      if (!opts.resume) {
        if (opts.json) ctx.out.json(record);
        else {ctx.out.line(
            `${record.episode_id}  ${record.decision} by ${record.by}  (checkpoint ${record.checkpoint_id})`,
          );}
        return;
      }
      if (!opts.json) ctx.out.note(`${record.decision} by ${record.by}; resuming ${record.episode_id}`);
      const r = await withSignals(ctx, (signal) => resume(ref, { ...g, signal }));
      printRunResult(ctx, r.value, { json: opts.json, root: g.root, interrupted: r.interrupted });
    });
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
        "or after a crash (from the first step the event log does not show finished). --abort ends it as aborted with terminal artifacts.",
    )
    .argument("<episode>", "episode id, unique id prefix, 'last', or path to an episode directory")
    .option("--abort", "end the run as aborted, with terminal artifacts")
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
      ) + FAIL_CLOSED,
    )
    .action(async (episode, opts, cmd) => {
      const g = globalOptions(cmd);
      const ref = resolveEpisodeRef(episode, g);
      const r = await withSignals(
        ctx,
        (signal) => resume(ref, { ...g, abort: opts.abort, using: opts.using, signal }),
      );
      printRunResult(ctx, r.value, { json: opts.json, root: g.root, interrupted: r.interrupted });
    });
}
