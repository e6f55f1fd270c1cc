/**
 * `noema validate <episode | dir | file>`: every artifact against its schema
 * and the contract's cross-file rules (`--profile noema`: plus noema's own
 * expectations, as warnings). One line per problem (and warning) on stdout,
 * a one-line verdict on stderr; exit 0 valid, 1 invalid (`--strict`: or
 * warned), 2 usage.
 *
 * @module
 */
import { type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { EXIT, NoemaError } from "../../errors.ts";
import { SCHEMA_NAMES } from "../../schema/registry.ts";
import { PROFILES } from "../../validate/profile.ts";
import { validate, type ValidationProblem, type ValidationWarning } from "../../validate/validate.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { resolveEpisodeRef } from "../episode_ref.ts";
import { crashedWhileSealing, sealingNote } from "../../read/sealing.ts";
import { statSync } from "node:fs";

/** Whether `path` is a directory (what validate checked was an episode, not one file). */
function isEpisodeDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * One problem as a line: `path:line: rule: message` (`path: rule: message`
 * when there is no line).
 *
 * @example
 * ```ts
 * import { problemLine } from "./validate.ts";
 * problemLine({ file: "events.jsonl", line: 3, rule: "payload.act", message: "payload.outcome: required field is missing" });
 * // "events.jsonl:3: payload.act: payload.outcome: required field is missing"
 * ```
 */
export function problemLine(p: ValidationProblem | ValidationWarning): string {
  return `${p.file}${p.line !== undefined ? `:${p.line}` : ""}: ${p.rule}: ${p.message}`;
}

/** Registers `noema validate`. */
export function registerValidate(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("validate")
    .summary("check artifacts against the contract")
    .description(
      "Check an episode (or one artifact file) against the artifact schemas and the contract's cross-file rules.",
    )
    .argument(
      "<target>",
      "episode id, unique id prefix, 'last', path to an episode directory, or path to one artifact file",
    )
    .option("-j, --json", "print the validation report as JSON")
    .addOption(
      new Option("--schema <name>", "schema of a single file whose name does not tell (events.jsonl → event, …)")
        .choices(
          SCHEMA_NAMES,
        ),
    )
    .addOption(
      new Option(
        "--profile <name>",
        "contract: the contract alone; noema: also noema's own expectations where the contract is open, as warnings",
      ).choices(PROFILES).default("contract" as const),
    )
    .option("--strict", "with --profile noema: a warning fails the command (exit 1) like a problem")
    .addHelpText(
      "after",
      examples(
        ["noema validate ep_01K9RBBMXXRSFWR49SXFGF4SPR", "a whole episode, cross-file rules included"],
        ["noema validate .noesis/episodes/ep_01K9…", "a run written by noesis"],
        ["noema validate export.jsonl --schema event", "one file, schema chosen explicitly"],
        ["noema validate ep_01K9… --json | jq .problem_count", "the report as JSON"],
        ["noema validate ep_01K9… --profile noema --strict", "also noema's own shapes; a warning fails it"],
      ) +
        "\nOutput: one 'path:line: rule: message' line per problem on stdout (warnings of --profile noema:\n" +
        "rules noema.*), then 'N problems in <target>' or 'valid: <target> (N events)' on stderr.\n" +
        "Exit 0 valid (warnings alone do not fail it unless --strict), 1 problems found, 2 usage error.\n",
    )
    .action((target, opts, cmd) => {
      const { out } = ctx;
      if (opts.strict && opts.profile !== "noema") {
        throw new NoemaError("usage", "--strict needs --profile noema (the contract profile has no warnings)", {
          exitCode: EXIT.USAGE,
        });
      }
      const progress = out.stderr.isTTY && !opts.json;
      let shown = false;
      const report = validate(resolveEpisodeRef(target, globalOptions(cmd)), {
        ...globalOptions(cmd),
        ...(opts.schema ? { schema: opts.schema } : {}),
        profile: opts.profile,
        strict: opts.strict ?? false,
        ...(progress
          ? {
            onProgress: (file: string, lines: number) => {
              out.stderr.write(`\r\x1b[Kvalidating ${file}: ${lines.toLocaleString("en-US")} lines…`);
              out.stderr.flush();
              shown = true;
            },
          }
          : {}),
      });
      if (shown) {
        out.stderr.write("\r\x1b[K");
        out.stderr.flush();
      }
      if (opts.json) {
        out.json(report);
      } else {
        for (const p of report.problems) out.line(problemLine(p));
        const hidden = report.problem_count - report.problems.length;
        if (hidden > 0) out.note(`noema: … and ${hidden} more problems not listed`);
        for (const w of report.warnings) out.line(problemLine(w));
        const hiddenWarnings = report.warning_count - report.warnings.length;
        if (hiddenWarnings > 0) out.note(`noema: … and ${hiddenWarnings} more warnings not listed`);
        const ec = out.errColor;
        const w = report.warning_count;
        const warned = w > 0 ? `, ${w} warning${w === 1 ? "" : "s"} of --profile noema` : "";
        if (report.valid) {
          const what = report.checked.events > 0 || report.checked.files.includes("events.jsonl")
            ? ` (${report.checked.events} events${warned})`
            : report.checked.learn_lines > 0
            ? ` (${report.checked.learn_lines} lines${warned})`
            : warned
            ? ` (${warned.slice(2)})`
            : "";
          out.note(`${ec.green("valid")}: ${report.target}${what}`);
        } else {
          const n = report.problem_count;
          out.note(
            ec.red(
              `${n} problem${n === 1 ? "" : "s"}${warned}${
                report.strict && w > 0 ? " (--strict)" : ""
              } in ${report.target}`,
            ),
          );
          // A run killed while sealing breaks the lifecycle rules until resume seals it: say so, as list and view do.
          if (report.episode_id !== null && isEpisodeDir(report.target) && crashedWhileSealing(report.target)) {
            out.note(`noema: episode ${report.episode_id} ${sealingNote(report.episode_id)}`);
          }
        }
      }
      if (!report.valid) ctx.exitCode = EXIT.ERROR;
    });
}
