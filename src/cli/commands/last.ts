/**
 * `noema last`: the newest episode's id (or its list entry with `--json`).
 * Anywhere an episode id is accepted, `last` names the same episode.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { EXIT, NoemaError } from "../../errors.ts";
import { listEpisodes } from "../../read/list.ts";
import { episodesDir, resolveRoot } from "../../store/layout.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";

/** Registers `noema last`. */
export function registerLast(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("last")
    .summary("print the newest episode's id")
    .description(
      "Print the id of the newest episode (the first row of noema list). Wherever an episode id is accepted,\n" +
        "'last' names that episode too: noema view last, noema events last --follow.",
    )
    .option("-j, --json", "print its list entry (as noema list --json) instead")
    .addHelpText(
      "after",
      examples(
        ["noema last", "the newest episode's id"],
        ["noema view last", "its dashboard"],
        ["noema last --json | jq .status", "its status"],
      ) + "\nExit codes: 0, or 1 when there are no episodes.\n",
    )
    .action((opts, cmd) => {
      const g = globalOptions(cmd);
      const newest = listEpisodes({ ...g, limit: 1 })[0];
      if (!newest) {
        throw new NoemaError("not_found", `no episodes in ${episodesDir(resolveRoot(g))}`, { exitCode: EXIT.ERROR });
      }
      if (opts.json) ctx.out.json(newest);
      else ctx.out.line(newest.episode_id);
    });
}
