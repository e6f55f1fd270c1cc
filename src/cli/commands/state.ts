/**
 * `noema state <episode>`: prints `state.json`.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { readState } from "../../read/episode.ts";
import { locateEpisodeRef } from "../episode_ref.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";

/** Registers `noema state`. */
export function registerState(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("state")
    .summary("print state.json")
    .description("Print an episode's state.json: indented on a terminal, one line when piped.")
    .argument("<episode>", "episode id, unique id prefix, 'last', or path to an episode directory")
    .option("-j, --json", "print JSON (the default; accepted so every read command takes --json)")
    .addHelpText(
      "after",
      examples(
        ["noema state ep_01K9RBBMXXRSFWR49SXFGF4SPR", "the state snapshot"],
        ["noema state .noema/episodes/ep_01K9RBBMXXRSFWR49SXFGF4SPR", "by directory"],
        ["noema state ep_01K9… | jq .outcomes.status", "one field, with jq"],
      ),
    )
    .action((episode, _opts, cmd) => {
      const g = globalOptions(cmd);
      ctx.out.json(readState(locateEpisodeRef(episode, g), g));
    });
}
