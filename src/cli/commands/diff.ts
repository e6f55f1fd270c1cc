/**
 * `noema diff <episode>`: the workspace diff of a verified run (files added,
 * modified and deleted between the snapshots taken before the first action
 * and after the last).
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { NoemaError } from "../../errors.ts";
import { readSummary } from "../../read/episode.ts";
import { locateEpisodeRef } from "../episode_ref.ts";
import type { WorkspaceDiff } from "../../schema/summary.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";

/** Registers `noema diff`. */
export function registerDiff(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("diff")
    .summary("print the workspace diff of a verified run")
    .description(
      "Print the files a run added, modified and deleted in its workspace (from summary.json verification.workspace_diff). " +
        "Snapshots are taken when the run has assertions (--verify-*).",
    )
    .argument("<episode>", "episode id, unique id prefix, 'last', or path to an episode directory")
    .option("--json", 'print {"added": [...], "modified": [...], "deleted": [...]}')
    .addHelpText(
      "after",
      examples(
        ["noema diff ep_01K9RBBMXXRSFWR49SXFGF4SPR", "A/M/D lines, like git status --short"],
        ["noema diff ep_01K9… --json | jq '.added | length'", "count added files"],
      ) + "\nA run without assertions has no diff: that is an error (exit 1).\n",
    )
    .action((episode, opts, cmd) => {
      const g = globalOptions(cmd);
      const summary = readSummary(locateEpisodeRef(episode, g), g);
      const verification = summary.verification as
        | { workspace_diff?: WorkspaceDiff | null; error?: string | null }
        | undefined;
      const diff = verification?.workspace_diff;
      if (!diff) {
        const why = verification?.error
          ? `verification could not run (${verification.error})`
          : "the run had no assertions, so no snapshots were taken";
        throw new NoemaError("no_diff", `episode ${String(summary.episode_id)} has no workspace diff: ${why}`);
      }
      if (opts.json) {
        ctx.out.json({ added: diff.added, modified: diff.modified, deleted: diff.deleted });
        return;
      }
      const c = ctx.out.color;
      for (const p of diff.added) ctx.out.line(`${c.green("A")}  ${p}`);
      for (const p of diff.modified) ctx.out.line(`${c.yellow("M")}  ${p}`);
      for (const p of diff.deleted) ctx.out.line(`${c.red("D")}  ${p}`);
      ctx.out.note(`${diff.added.length} added, ${diff.modified.length} modified, ${diff.deleted.length} deleted`);
    });
}
