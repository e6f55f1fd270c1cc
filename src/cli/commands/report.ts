/**
 * `noema report <episode> [-o FILE | -o -]`: one self-contained HTML page of
 * an episode (timeline, plan with statuses, each action with its verdicts
 * and output, verification and workspace diff, metrics) to share. The page
 * loads nothing: no scripts, no styles, fonts or images from elsewhere, and
 * a Content Security Policy that forbids any request.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { Buffer } from "node:buffer";
import { type Stats, statSync } from "node:fs";
import { dirname } from "node:path";
import { EXIT, NoemaError } from "../../errors.ts";
import { renderReport } from "../../report/html.ts";
import { buildReport } from "../../report/model.ts";
import { writeFileAtomic } from "../../store/atomic.ts";
import { locateEpisodeRef } from "../episode_ref.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { usageError } from "../errors.ts";

function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    throw usageError(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return n;
}

/** Registers `noema report`. */
export function registerReport(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("report")
    .summary("write a self-contained HTML report of one episode")
    .description(
      "Write one self-contained HTML file of an episode to share: the plan with step statuses, each action with its " +
        "policy verdicts and output, verification and the workspace diff, metrics and the timeline. Vetoes and " +
        "policy failures are marked apart. The page runs no script and loads nothing (a Content Security Policy " +
        "forbids every request); sections are collapsible, outputs are excerpts, so a 10,000-step run stays quick " +
        "to open. Works for runs that have not finished.",
    )
    .argument("<episode>", "episode id, a unique id prefix, last, or path to an episode directory")
    .option("-o, --output <file>", "where to write the page ('-' for stdout)", "<episode id>.html")
    .option("--excerpt-chars <n>", "longest excerpt of one action's input or output, in characters", "2000")
    .addHelpText(
      "after",
      examples(
        ["noema report ep_01K9RBBMXXRSFWR49SXFGF4SPR -o report.html", "write report.html"],
        ["noema report last", "the newest episode, to <id>.html"],
        ["noema report ep_01K9… -o - | gzip > report.html.gz", "to stdout"],
      ) +
        "\nThe file is written atomically (a temp file renamed into place), with owner-only permissions (0600):\n" +
        "outputs may hold sensitive data. The path written is printed on stderr.\n",
    )
    .action((episode, opts, cmd) => {
      const excerptChars = positiveInt("--excerpt-chars", opts.excerptChars, 2000);
      const loc = locateEpisodeRef(episode, globalOptions(cmd));
      const page = renderReport(buildReport(loc, { excerptChars }));
      if (opts.output === "-") {
        ctx.out.stdout.write(page);
        return;
      }
      const path = opts.output === "<episode id>.html" ? `${loc.id}.html` : opts.output;
      if (path === "") throw usageError("--output must not be empty");
      // The page goes into an existing directory: a mistyped -o never creates directories.
      const parent = dirname(path);
      let st: Stats | undefined;
      try {
        st = statSync(parent);
      } catch { /* missing or not reachable: said below */ }
      if (!st?.isDirectory()) {
        const why = st ? "is not a directory" : "does not exist";
        throw new NoemaError("write_failed", `cannot write ${path}: ${parent} ${why}`, { exitCode: EXIT.ERROR });
      }
      try {
        writeFileAtomic(path, page);
      } catch (e) {
        throw new NoemaError("write_failed", `cannot write ${path}: ${(e as Error).message}`, { exitCode: EXIT.ERROR });
      }
      const kib = Math.max(1, Math.round(Buffer.byteLength(page) / 1024));
      ctx.out.note(`noema: wrote ${path} (${kib} KiB): open it in a browser`);
    });
}
