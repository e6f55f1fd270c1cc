/**
 * JSON Schema (draft 2020-12) of the files a user writes: a task file and
 * `noema.jsonc`, from the same valibot schemas `noema run` reads them with, so
 * that an editor checks one as it is typed (`"$schema":
 * "./schemas/task.schema.json"`). `schemas/task.schema.json` and
 * `schemas/noema.schema.json` are this module's output; a test fails when they
 * are stale.
 *
 * A JSON Schema says less than noema checks: a rule valibot states as code (a
 * rule file's syntax, a duration's range, a path that must exist) is left out,
 * and `noema run` still reports it, at its file, line and field. Unknown keys
 * are refused, as `noema run` refuses them.
 *
 * @module
 */
import { type ConversionConfig, type JsonSchema, toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";
import { NOEMA_VERSION } from "../version.ts";
import { STEP_KINDS } from "../schema/plan.ts";
import { ProjectConfig, StepObject, StepSpec, TaskFile } from "./settings.ts";

/** The names of the input files' schemas: a task file, and the project config `noema.jsonc`. */
export const INPUT_SCHEMA_NAMES = ["task", "noema"] as const;
/** One of {@link INPUT_SCHEMA_NAMES}. */
export type InputSchemaName = (typeof INPUT_SCHEMA_NAMES)[number];

/** Each input schema: its valibot schema, title and the file it describes. */
export const INPUT_SCHEMAS: Readonly<
  Record<InputSchemaName, { schema: v.GenericSchema; title: string; file: string; description: string }>
> = {
  task: {
    schema: TaskFile as unknown as v.GenericSchema,
    title: "noema task file",
    file: "<task>.jsonc",
    description: "A task file for `noema run <file>`: the task and, optionally, its plan and any setting.",
  },
  noema: {
    schema: ProjectConfig as unknown as v.GenericSchema,
    title: "noema.jsonc",
    file: "noema.jsonc",
    description: "The project config: defaults for every run started in its directory (flags and task files win).",
  },
};

/**
 * Whether `name` names an input file's schema.
 *
 * @example
 * ```ts
 * import { isInputSchemaName } from "./input_json_schema.ts";
 * isInputSchemaName("task"); // true
 * isInputSchemaName("event"); // false
 * ```
 */
export function isInputSchemaName(name: string): name is InputSchemaName {
  return (INPUT_SCHEMA_NAMES as readonly string[]).includes(name);
}

/**
 * The JSON Schema of an input file.
 *
 * @example
 * ```ts
 * import { inputJsonSchema } from "./input_json_schema.ts";
 * inputJsonSchema("task").required; // ["task"]
 * ```
 */
export function inputJsonSchema(name: InputSchemaName): Record<string, unknown> {
  const entry = INPUT_SCHEMAS[name];
  // What a JSON Schema cannot say (valibot's checks written as code) is left to `noema run`, which reports it.
  const config: ConversionConfig = {
    target: "draft-2020-12",
    errorMode: "ignore",
    typeMode: "input",
    // A step is chosen by its type (valibot's `lazy`, which a conversion cannot follow): either form.
    overrideSchema: ({ valibotSchema }) =>
      valibotSchema === StepSpec ? { anyOf: [LABEL, convert(StepObject) as JsonSchema] } : undefined,
  };
  const convert = (schema: v.GenericSchema): Record<string, unknown> => {
    const { $schema: _draft, ...rest } = toJsonSchema(schema, config) as Record<string, unknown>;
    return rest;
  };
  const { $defs, ...rest } = convert(entry.schema);
  // Definitions the overridden step left behind, unused.
  const used = $defs !== undefined && JSON.stringify(rest).includes('"#/$defs/');
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `urn:noema:schema:${name}:${NOEMA_VERSION}`,
    title: entry.title,
    description: `${entry.description} Generated from noema ${NOEMA_VERSION}; noema run checks more than a schema ` +
      "can say (a rule's syntax, a path that must exist), at the file, line and field.",
    ...rest,
    ...(used ? { $defs } : {}),
  };
}

/** A step's label, `"<kind>:<description>"` (valibot's pattern has the `s` flag, which JSON Schema lacks). */
const LABEL: JsonSchema = {
  type: "string",
  pattern: `^(?:${STEP_KINDS.join("|")}):[\\s\\S]+`,
  description: 'A step as "<kind>:<description>", e.g. "act:List the files".',
};

/**
 * The text of `schemas/<name>.schema.json` for an input file: pretty JSON with a final newline.
 *
 * @example
 * ```ts
 * import { inputJsonSchemaText } from "./input_json_schema.ts";
 * inputJsonSchemaText("noema").endsWith("\n"); // true
 * ```
 */
export function inputJsonSchemaText(name: InputSchemaName): string {
  return JSON.stringify(inputJsonSchema(name), null, 2) + "\n";
}
