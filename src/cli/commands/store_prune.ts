/**
 * `noema store prune --older-than 90d [--dry-run] [--json]`: retention for
 * the shared store. Removes the finished runs first stored longer ago than
 * the duration (their catalog rows, lines, files and leases), in batches,
 * keeping their decisions as tombstones. Never a run that is going, waiting,
 * paused or crashed, nor one a live writer holds. `--dry-run` lists what a
 * prune would remove, with the same counts.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { PRUNE_BATCH, type PruneBatch } from "../../shared_store/shared_store.ts";
import { type CliContext, examples } from "../context.ts";
import { usageError } from "../errors.ts";
import { parseDuration } from "../time_args.ts";
import { projectScopeOf, withStore } from "../store_option.ts";

/** What a prune did (or would do), as `--json` prints it. */
interface PruneReport {
  location: string;
  dry_run: boolean;
  older_than: string;
  /** The project pruned, or null for every project. */
  project: string | null;
  episodes: number;
  rows: number;
  lines: number;
  files: number;
  bytes: number;
  tombstones: number;
  episode_ids: string[];
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** The summary line of a report. */
function summary(r: PruneReport): string {
  const verb = r.dry_run ? "would remove" : "removed";
  return `${verb} ${plural(r.episodes, "episode")} from ${r.location}${r.project ? ` (project ${r.project})` : ""}: ` +
    `${plural(r.rows, "row")} (${plural(r.lines, "line")}, ${plural(r.files, "file")}), ${plural(r.bytes, "byte")}; ` +
    `${plural(r.tombstones, "decision")} ${r.dry_run ? "would be kept" : "kept"} as tombstones`;
}

/** Registers `noema store prune` under `noema store`. */
export function registerStorePrune(store: CommandUnknownOpts, ctx: CliContext): void {
  store.command("prune")
    .summary("retention: remove finished runs older than --older-than from the store (decisions kept as tombstones)")
    .description(
      "Remove from the shared store the finished runs (run state terminal) first stored more than --older-than ago\n" +
        "(stored_at, the store's clock): their catalog rows, lines, files and leases. Never a run that is going,\n" +
        "waiting, paused or crashed, nor one a live writer holds. Their decisions stay as tombstones (note cleared).\n" +
        "With a project in force (--project, NOEMA_PROJECT, noema.jsonc) only its runs; --all-projects: every run.\n" +
        "--dry-run lists the episodes it would remove, with the same counts. Run it as the schema's owner.",
    )
    .requiredOption("--older-than <duration>", "age: 90d, 12h, 2w")
    .option("-n, --dry-run", "list what would be removed; remove nothing")
    .option("-j, --json", "print one object: {dry_run, episodes, rows, lines, files, bytes, tombstones, episode_ids…}")
    .option("--batch <n>", `episodes per transaction (default ${PRUNE_BATCH})`)
    .addHelpText(
      "after",
      examples(
        ["noema store prune --older-than 90d --dry-run", "what a prune would remove"],
        ["noema store prune --older-than 90d --json", "remove runs stored more than 90 days ago"],
        ["noema store prune --older-than 30d --project ci", "only project ci's runs"],
      ) + "\nProgress goes to stderr after each full batch. Exit codes: 0, 1 error, 2 usage.\n",
    )
    .action(async (opts, cmd) => {
      const ms = parseDuration(opts.olderThan, "--older-than");
      const batch = opts.batch === undefined ? PRUNE_BATCH : Number(opts.batch);
      if (!Number.isInteger(batch) || batch < 1) {
        throw usageError(`--batch must be a positive integer, got ${opts.batch}`);
      }
      const project = projectScopeOf(cmd);
      await withStore(cmd, async (s) => {
        const r: PruneReport = {
          location: s.location,
          dry_run: opts.dryRun === true,
          older_than: opts.olderThan,
          project: project ?? null,
          episodes: 0,
          rows: 0,
          lines: 0,
          files: 0,
          bytes: 0,
          tombstones: 0,
          episode_ids: [],
        };
        const add = (b: PruneBatch) => {
          r.episodes += b.episode_ids.length;
          for (const k of ["rows", "lines", "files", "bytes", "tombstones"] as const) r[k] += b[k];
          if (opts.json) r.episode_ids.push(...b.episode_ids);
          else if (r.dry_run) { for (const id of b.episode_ids) ctx.out.line(`would remove  ${id}`); }
          if (b.episode_ids.length >= batch) {
            ctx.out.note(
              `noema: store prune: ${r.dry_run ? "found" : "removed"} ${plural(r.episodes, "episode")} so far`,
            );
          }
        };
        await s.prune({ older_than_ms: ms, project, dry_run: r.dry_run, batch }, add);
        if (opts.json) ctx.out.json(r);
        else ctx.out.line(summary(r));
      });
    });
}
