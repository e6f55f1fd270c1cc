/**
 * `noema list`: episodes, newest first, as a table, JSON or bare ids.
 *
 * @module
 */
import { type CommandUnknownOpts, InvalidArgumentError, Option } from "@commander-js/extra-typings";
import { listEpisodes } from "../../read/list.ts";
import { episodesDir, resolveRoot } from "../../store/layout.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { displayStatus, statusStyle } from "../format.ts";
import { oneLine } from "../output.ts";

/**
 * Parses a positive integer option value; anything else is a usage error.
 *
 * @example
 * ```ts
 * import { parsePositiveInt } from "./list.ts";
 * parsePositiveInt("5"); // 5
 * ```
 */
export function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) {
    throw new InvalidArgumentError("expected a positive integer.");
  }
  return n;
}

/** Registers `noema list`. */
export function registerList(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("list")
    .alias("ls")
    .summary("list episodes, newest first")
    .description("List episodes, newest first: a table, a JSON array (--json) or bare ids (--quiet).")
    .addOption(new Option("-n, --limit <n>", "most episodes to show").argParser(parsePositiveInt).default(20))
    .option("-j, --json", "print a JSON array of entries")
    .option("-q, --quiet", "print only episode ids, one per line")
    .addHelpText(
      "after",
      examples(
        ["noema list", "the 20 newest episodes"],
        ["noema list --limit 5 --json", "entries as JSON"],
        ["noema list -q | xargs -n1 noema validate", "validate every listed episode"],
        ["noema --root ../other/.noema list", "episodes under another root"],
      ) +
        "\nColumns: STARTED_AT, EPISODE_ID, STATUS (outcomes.status; '(waiting)' for a run that has not finished),\n" +
        "OUTCOME (verification outcome of a finished run), TASK.\n",
    )
    .action((opts, cmd) => {
      const g = globalOptions(cmd);
      const entries = listEpisodes({ ...g, limit: opts.limit });
      const { out } = ctx;
      if (opts.json) {
        out.json(entries);
        return;
      }
      if (opts.quiet) {
        for (const e of entries) out.line(e.episode_id);
        return;
      }
      if (entries.length === 0) {
        out.note(`noema: no episodes in ${episodesDir(resolveRoot(g))}`);
        return;
      }
      const c = out.color;
      out.table(
        [
          { header: "STARTED_AT" },
          { header: "EPISODE_ID" },
          { header: "STATUS" },
          { header: "OUTCOME" },
          { header: "TASK", flex: true },
        ],
        entries.map((e) => [
          e.started_at ?? "-",
          { text: e.episode_id, style: c.cyan },
          {
            text: e.pending ? "waiting for approval" : displayStatus(e.lifecycle, e.status),
            style: statusStyle(e.status, c),
          },
          { text: e.outcome ?? "-", style: e.outcome ? statusStyle(e.outcome, c) : c.dim },
          (e.task !== null ? oneLine(e.task) : e.error ? `(${oneLine(e.error)})` : "-") +
          (e.pending ? `  [${e.pending.step_id}: ${oneLine(e.pending.reason)}]` : ""),
        ]),
      );
    });
}
