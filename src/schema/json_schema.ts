/**
 * JSON Schema (draft 2020-12) generation from the valibot schemas. The files
 * under `schemas/` are this module's output; a test fails when they are stale.
 *
 * @module
 */
import { toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";
import { PHASE_PAYLOADS } from "./event.ts";
import { LearnInlinePayload, LearnPointerPayload } from "./payloads.ts";
import { SCHEMAS, type SchemaName } from "./registry.ts";

type Json = Record<string, unknown>;

function convert(schema: v.GenericSchema): Json {
  const out = toJsonSchema(schema, { target: "draft-2020-12", errorMode: "ignore" }) as Json;
  delete out.$schema;
  return out;
}

/**
 * The `$id` of a schema.
 *
 * @example
 * ```ts
 * import { schemaId } from "./json_schema.ts";
 * schemaId("event"); // "urn:noema:schema:event:1.3.0"
 * ```
 */
export function schemaId(name: SchemaName): string {
  return `urn:noema:schema:${name}:${SCHEMAS[name].version}`;
}

/** Rules a plain conversion cannot see, added by hand next to their valibot twins. */
function addRules(name: SchemaName, out: Json): void {
  const props = out.properties as Record<string, Json>;
  if (name === "event") {
    out.allOf = [
      {
        if: { properties: { phase: { const: "learn" } }, required: ["phase"] },
        then: {
          properties: {
            payload: {
              description: "Exactly one of the two forms must match.",
              oneOf: [convert(LearnPointerPayload), convert(LearnInlinePayload)],
            },
          },
        },
      },
      ...Object.entries(PHASE_PAYLOADS).map(([phase, schema]) => ({
        if: { properties: { phase: { const: phase } }, required: ["phase"] },
        then: { properties: { payload: convert(schema as v.GenericSchema) } },
      })),
    ];
  }
  if (name === "summary") {
    props.verification.allOf = [
      {
        description: "No assertions provided: passed null, assertions empty, workspace_diff and snapshots null.",
        if: { properties: { provided: { const: false } }, required: ["provided"] },
        then: {
          properties: {
            passed: { type: "null" },
            assertions: { maxItems: 0 },
            workspace_diff: { type: "null" },
            snapshots: { type: "null" },
          },
        },
      },
      {
        description: "A verification error leaves passed null.",
        if: { properties: { error: { type: "string" } }, required: ["error"] },
        then: { properties: { passed: { type: "null" } } },
      },
    ];
  }
  if (name === "manifest") {
    const files = props.files as Json;
    files.not = { contains: { type: "object", properties: { name: { const: "manifest.json" } }, required: ["name"] } };
  }
}

/**
 * Generates the JSON Schema of one artifact.
 *
 * @example
 * ```ts
 * import { generateJsonSchema } from "./json_schema.ts";
 * const s = generateJsonSchema("summary");
 * console.log(s.title); // "summary.json"
 * ```
 */
export function generateJsonSchema(name: SchemaName): Json {
  const entry = SCHEMAS[name];
  const body = convert(entry.schema);
  addRules(name, body);
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: schemaId(name),
    title: entry.title,
    description: `noema artifact contract: ${entry.file} (version ${entry.version}). Unknown properties are allowed and kept.`,
    ...body,
  };
}

/**
 * The text of `schemas/<name>.schema.json`: pretty JSON with a final newline.
 *
 * @example
 * ```ts
 * import { jsonSchemaText } from "./json_schema.ts";
 * jsonSchemaText("event").endsWith("\n"); // true
 * ```
 */
export function jsonSchemaText(name: SchemaName): string {
  return JSON.stringify(generateJsonSchema(name), null, 2) + "\n";
}
