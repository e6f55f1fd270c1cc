/**
 * `noema schema [name]`: the JSON Schema (draft 2020-12) of one artifact, or
 * the list of schema names.
 *
 * @module
 */
import { Argument, type CommandUnknownOpts } from "@commander-js/extra-typings";
import { jsonSchemaText } from "../../schema/json_schema.ts";
import { SCHEMA_NAMES, SCHEMAS } from "../../schema/registry.ts";
import { type CliContext, examples } from "../context.ts";

/** Registers `noema schema`. */
export function registerSchema(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("schema")
    .summary("print an artifact's JSON Schema")
    .description("Print the JSON Schema (draft 2020-12) of an artifact, or list the schema names.")
    .addArgument(new Argument("[name]", "schema name").choices(SCHEMA_NAMES))
    .option("-j, --json", "with no name: print the list as JSON")
    .addHelpText(
      "after",
      examples(
        ["noema schema", "the schema names, with their files and versions"],
        ["noema schema event > event.schema.json", "the event record schema"],
        ["noema schema summary | jq .required", "required summary.json fields"],
      ),
    )
    .action((name, opts) => {
      const { out } = ctx;
      if (name !== undefined) {
        out.stdout.write(jsonSchemaText(name));
        return;
      }
      if (opts.json) {
        out.json(
          SCHEMA_NAMES.map((n) => ({
            name: n,
            file: SCHEMAS[n].file,
            title: SCHEMAS[n].title,
            version: SCHEMAS[n].version,
          })),
        );
        return;
      }
      out.table(
        [{ header: "NAME" }, { header: "FILE" }, { header: "VERSION" }],
        SCHEMA_NAMES.map((n) => [{ text: n, style: out.color.cyan }, SCHEMAS[n].file, SCHEMAS[n].version]),
      );
    });
}
