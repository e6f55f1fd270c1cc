/**
 * `noema schema [name]`: the JSON Schema (draft 2020-12) of one artifact or
 * input file (a task file, `noema.jsonc`), or the list of schema names.
 *
 * @module
 */
import { Argument, type CommandUnknownOpts } from "@commander-js/extra-typings";
import { jsonSchemaText } from "../../schema/json_schema.ts";
import { SCHEMA_NAMES, SCHEMAS } from "../../schema/registry.ts";
import {
  INPUT_SCHEMA_NAMES,
  INPUT_SCHEMAS,
  inputJsonSchemaText,
  isInputSchemaName,
} from "../../runtime/input_json_schema.ts";
import { NOEMA_VERSION } from "../../version.ts";

/** Each schema's name, file, title and version: the artifacts', then the input files' (versioned with noema). */
function schemaList(): { name: string; file: string; title: string; version: string }[] {
  return [
    ...SCHEMA_NAMES.map((n) => ({
      name: n,
      file: SCHEMAS[n].file,
      title: SCHEMAS[n].title,
      version: SCHEMAS[n].version,
    })),
    ...INPUT_SCHEMA_NAMES.map((n) => ({
      name: n,
      file: INPUT_SCHEMAS[n].file,
      title: INPUT_SCHEMAS[n].title,
      version: NOEMA_VERSION,
    })),
  ];
}
import { type CliContext, examples } from "../context.ts";

/** Registers `noema schema`. */
export function registerSchema(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("schema")
    .summary("print an artifact's or a task file's JSON Schema")
    .description(
      "Print the JSON Schema (draft 2020-12) of an artifact, or of a file you write (task: a task file, noema:\n" +
        "noema.jsonc), or list the schema names.",
    )
    .addArgument(new Argument("[name]", "schema name").choices([...SCHEMA_NAMES, ...INPUT_SCHEMA_NAMES]))
    .option("-j, --json", "with no name: print the list as JSON")
    .addHelpText(
      "after",
      examples(
        ["noema schema", "the schema names, with their files and versions"],
        ["noema schema event > event.schema.json", "the event record schema"],
        ["noema schema summary | jq .required", "required summary.json fields"],
        ["noema schema task > task.schema.json", 'for an editor: "$schema": "./task.schema.json" in a task file'],
      ),
    )
    .action((name, opts) => {
      const { out } = ctx;
      if (name !== undefined) {
        out.stdout.write(isInputSchemaName(name) ? inputJsonSchemaText(name) : jsonSchemaText(name));
        return;
      }
      if (opts.json) {
        out.json(schemaList());
        return;
      }
      out.table(
        [{ header: "NAME" }, { header: "FILE" }, { header: "VERSION" }],
        schemaList().map((s) => [{ text: s.name, style: out.color.cyan }, s.file, s.version]),
      );
    });
}
