/**
 * `noema prune --older-than 30d [--status S] [--dry-run] [--json]`: remove
 * old episode directories. A running episode (its lock held by a live
 * process) is never removed; each removal takes the episode's lock first.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { lstatSync, rmSync, unlinkSync } from "node:fs";
import { type EpisodeEntry, listEpisodes, statusWord } from "../../read/list.ts";
import { acquireLock } from "../../store/lock.ts";
import { collect } from "../args.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { usageError } from "../errors.ts";
import { oneLine } from "../output.ts";
import { parseDuration } from "../time_args.ts";
import { parseStatuses } from "./list.ts";

/** One episode `prune` removed, would remove, or kept. */
interface PruneRow {
  episode_id: string;
  episode_dir: string;
  status: string;
  started_at: string | null;
  task: string | null;
}

const row = (e: EpisodeEntry): PruneRow => ({
  episode_id: e.episode_id,
  episode_dir: e.episode_dir,
  status: statusWord(e),
  started_at: e.started_at,
  task: e.task,
});

/** Removes one episode directory under its lock; a symlinked episode loses only its link. */
function removeEpisode(dir: string): string | null {
  let lock;
  try {
    lock = acquireLock(dir, "prune");
  } catch (e) {
    return (e as Error).message;
  }
  try {
    if (lstatSync(dir).isSymbolicLink()) unlinkSync(dir);
    else rmSync(dir, { recursive: true, force: true });
    return null;
  } catch (e) {
    lock.release();
    return (e as Error).message;
  }
}

/** Registers `noema prune`. */
export function registerPrune(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("prune")
    .summary("remove episodes older than a duration")
    .description(
      "Remove the directories of episodes started more than --older-than ago (optionally only some statuses),\n" +
        "printing each one. A running episode is never removed. --dry-run prints what would go.",
    )
    .requiredOption("--older-than <duration>", "age: 30d, 12h, 90m, 2w")
    .option(
      "-s, --status <status>",
      "only this status (as noema list --status); repeatable or comma-separated",
      collect,
    )
    .option("-n, --dry-run", "print what would be removed; remove nothing")
    .option("-j, --json", 'print {"dry_run", "removed": [...], "skipped": [...]}')
    .addHelpText(
      "after",
      examples(
        ["noema prune --older-than 30d --dry-run", "what a cleanup would remove"],
        ["noema prune --older-than 30d", "remove episodes started more than 30 days ago"],
        ["noema prune --older-than 7d --status ok,vetoed --json", "only finished ok/vetoed runs, as JSON"],
      ) +
        "\nRunning episodes are skipped (listed under skipped with --json). Exit codes: 0, 1 when a removal failed.\n",
    )
    .action((opts, cmd) => {
      const g = globalOptions(cmd);
      const cutoff = Date.now() - parseDuration(opts.olderThan, "--older-than");
      const statuses = parseStatuses(opts.status);
      if (statuses?.includes("running")) throw usageError("--status running: running episodes are never pruned");
      const all = listEpisodes({ ...g, limit: Infinity, status: statuses });
      const old = all.filter((e) => e.started_at !== null && Date.parse(e.started_at) < cutoff);
      const removed: PruneRow[] = [], skipped: (PruneRow & { reason: string })[] = [];
      const { out } = ctx;
      const c = out.color;
      for (const e of old) {
        if (e.run_state === "running") {
          skipped.push({ ...row(e), reason: "running" });
          continue;
        }
        const problem = opts.dryRun ? null : removeEpisode(e.episode_dir);
        if (problem) skipped.push({ ...row(e), reason: problem });
        else removed.push(row(e));
      }
      if (opts.json) out.json({ dry_run: opts.dryRun === true, removed, skipped });
      else {
        const verb = opts.dryRun ? "would remove" : "removed";
        for (const r of removed) {
          out.line(`${verb}  ${c.cyan(r.episode_id)}  ${r.status}  ${r.started_at}  ${oneLine(r.task ?? "-")}`);
        }
        for (const s of skipped) out.note(`noema: kept ${s.episode_id}: ${s.reason}`);
        const n = `${removed.length} episode${removed.length === 1 ? "" : "s"}`;
        // What stays, by why (a count of "kept" that left out the newer episodes read as if nothing stayed).
        const kept = [`${all.length - old.length} not older than ${opts.olderThan}`];
        if (skipped.length > 0) kept.push(`${skipped.length} older but ${opts.dryRun ? "to be kept" : "kept"} (above)`);
        const others = statuses ? `; episodes of other statuses are not counted` : "";
        out.note(`${n} ${opts.dryRun ? "would be removed" : "removed"}; kept: ${kept.join(", ")}${others}`);
      }
      if (skipped.some((s) => s.reason !== "running")) ctx.exitCode = 1;
    });
}
