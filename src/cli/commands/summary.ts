/**
 * `noema summary <episode>`: prints `summary.json` (terminal runs only).
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { readSummary } from "../../read/episode.ts";
import { crashedWhileSealing, sealingNote } from "../../read/sealing.ts";
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
      ) + "\nA run that has not finished has no summary.json: that is an error (exit 1). A run killed while sealing " +
        "(manifest.json missing) is said to be 'crashed while sealing'; noema resume completes it.\n",
    )
    .action((episode, _opts, cmd) => {
      const g = globalOptions(cmd);
      const loc = locateEpisodeRef(episode, g);
      const summary = readSummary(loc, g);
      // The summary is there, the seal is not complete: say so on stderr (stdout stays the JSON).
      if (crashedWhileSealing(loc.dir)) ctx.out.note(`noema: episode ${loc.id} ${sealingNote(loc.id)}`);
      ctx.out.json(summary);
    });
}
