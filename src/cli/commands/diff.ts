/**
 * `noema diff <episode>`: the workspace diff of a verified run (files added,
 * modified and deleted between the snapshots taken before the first action
 * and after the last).
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { NoemaError } from "../../errors.ts";
import { episodePaths, readSummary } from "../../read/episode.ts";
import { locateEpisodeRef } from "../episode_ref.ts";
import type { WorkspaceDiff } from "../../schema/summary.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";

const KEYS = ["added", "modified", "deleted"] as const;

/** The diff as recorded, or an error naming summary.json and the field that is not a list of paths. */
function checkedDiff(diff: unknown, file: string): WorkspaceDiff {
  const record = (typeof diff === "object" && diff !== null && !Array.isArray(diff) ? diff : {}) as Record<
    string,
    unknown
  >;
  for (const key of KEYS) {
    const value = record[key];
    if (!Array.isArray(value) || !value.every((p) => typeof p === "string")) {
      throw new NoemaError(
        "bad_summary",
        `verification.workspace_diff.${key}: expected an array of paths, got ${JSON.stringify(value) ?? "nothing"}`,
        { file },
      );
    }
  }
  return record as unknown as WorkspaceDiff;
}

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
      const loc = locateEpisodeRef(episode, g);
      const summary = readSummary(loc, g);
      const verification = summary.verification as
        | { workspace_diff?: WorkspaceDiff | null; error?: string | null }
        | undefined;
      if (!verification?.workspace_diff) {
        const why = verification?.error
          ? `verification could not run (${verification.error})`
          : "the run had no assertions, so no snapshots were taken";
        throw new NoemaError("no_diff", `episode ${loc.id} has no workspace diff: ${why}`);
      }
      const diff = checkedDiff(verification.workspace_diff, episodePaths(loc.dir).summary);
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
