/**
 * `noema events <episode>`: the event timeline, one line per event, or
 * NDJSON exactly as stored. Streams: memory does not grow with the log.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { existsSync } from "node:fs";
import { NoemaError } from "../../errors.ts";
import { episodePaths } from "../../read/episode.ts";
import { readJsonl } from "../../store/jsonl.ts";
import { locateEpisodeRef } from "../episode_ref.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { eventSummary } from "../format.ts";
import { neutralize } from "../output.ts";

/** Width the phase column is padded to (the longest common phase, `action_candidate`). */
export const PHASE_WIDTH = 16;

/** Registers `noema events`. */
export function registerEvents(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("events")
    .summary("print the event timeline")
    .description("Print an episode's events: '[timestamp] phase summary' lines, or NDJSON exactly as stored (--json).")
    .argument("<episode>", "episode id, or path to an episode directory")
    .option("-p, --phase <phase>", "only events of this phase (start, plan, act, direction, governance, runtime, …)")
    .option("-j, --json", "print the events as NDJSON, one per line, exactly as stored")
    .addHelpText(
      "after",
      examples(
        ["noema events ep_01K9RBBMXXRSFWR49SXFGF4SPR", "the whole timeline"],
        ["noema events ep_01K9… --phase act", "only act events"],
        ["noema events ep_01K9… --json | jq -c .payload", "payloads, with jq"],
      ) +
        "\nA damaged line stops the listing: the events before it are printed, then an error naming\n" +
        "file:line (exit 1). 'noema validate' lists every problem instead.\n",
    )
    .action((episode, opts, cmd) => {
      const loc = locateEpisodeRef(episode, globalOptions(cmd));
      const path = episodePaths(loc.dir).events;
      if (!existsSync(path)) throw new NoemaError("not_found", `episode ${loc.id} has no events.jsonl`, { file: path });
      const { out } = ctx;
      const c = out.color;
      for (const entry of readJsonl(path)) {
        if (entry.problem) {
          throw new NoemaError(`jsonl_${entry.problem}`, entry.message, { file: path, line: entry.line });
        }
        const e = entry.value;
        if (opts.phase !== undefined && e.phase !== opts.phase) continue;
        if (opts.json) {
          out.ndjson(e, entry.text);
          continue;
        }
        const ts = typeof e.timestamp === "string" ? neutralize(e.timestamp) : "?";
        const phase = typeof e.phase === "string" ? neutralize(e.phase) : "?";
        out.line(`${c.dim(`[${ts}]`)} ${c.cyan(phase.padEnd(PHASE_WIDTH))} ${eventSummary(e)}`.trimEnd());
      }
    });
}
