/**
 * `noema version`: noema's version and the artifact contract versions (the
 * same text as `noema --version`, or JSON).
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { CONTRACT_VERSIONS, NOEMA_VERSION } from "../../version.ts";
import { type CliContext, examples } from "../context.ts";

/**
 * The version line: `noema 0.1.0 (contracts: event 1.3.0, state 1.0/1.0.0, summary 1.3.0, manifest manifest/1.0, learn learn/1.0)`.
 *
 * @example
 * ```ts
 * import { versionText } from "./version.ts";
 * versionText().startsWith("noema "); // true
 * ```
 */
export function versionText(): string {
  const v = CONTRACT_VERSIONS;
  return `noema ${NOEMA_VERSION} (contracts: event ${v.event}, state ${v.state}/${v.state_schema}, summary ${v.summary}, ` +
    `manifest ${v.manifest}, learn ${v.learn})`;
}

/** Registers `noema version`. */
export function registerVersion(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("version")
    .summary("print versions")
    .description("Print noema's version and the artifact contract versions.")
    .option("-j, --json", "print {noema, contracts} as JSON")
    .addHelpText("after", examples(["noema version", "same as noema --version"], ["noema version --json", "as JSON"]))
    .action((opts) => {
      if (opts.json) ctx.out.json({ noema: NOEMA_VERSION, contracts: CONTRACT_VERSIONS });
      else ctx.out.line(versionText());
    });
}
