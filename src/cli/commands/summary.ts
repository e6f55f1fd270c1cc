/**
 * `noema summary <episode>`: prints `summary.json` (terminal runs only).
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { readSummary } from "../../read/episode.ts";
import { locateEpisodeRef } from "../episode_ref.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";

/** Registers `noema summary`. */
export function registerSummary(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("summary")
    .summary("print summary.json (finished runs)")
    .description("Print an episode's summary.json (finished runs only): indented on a terminal, one line when piped.")
    .argument("<episode>", "episode id, unique id prefix, 'last', or path to an episode directory")
    .option("-j, --json", "print JSON (the default; accepted so every read command takes --json)")
    .addHelpText(
      "after",
      examples(
        ["noema summary ep_01K9RBBMXXRSFWR49SXFGF4SPR", "outcome, verification, flags, metrics"],
        ["noema summary ep_01K9… | jq -r .outcome", "just the outcome"],
      ) + "\nA run that has not finished has no summary.json: that is an error (exit 1).\n",
    )
    .action((episode, _opts, cmd) => {
      const g = globalOptions(cmd);
      ctx.out.json(readSummary(locateEpisodeRef(episode, g), g));
    });
}
