/**
 * JSON Schema (draft 2020-12) generation from the valibot schemas. The files
 * under `schemas/` are this module's output; a test fails when they are stale.
 *
 * @module
 */
import { type ConversionConfig, toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";
import { Timestamp } from "./common.ts";
import { PHASE_PAYLOADS } from "./event.ts";
import { LearnInlinePayload, LearnPointerPayload } from "./payloads.ts";
import { type SchemaName, SCHEMAS } from "./registry.ts";

type Json = Record<string, unknown>;

/**
 * Conversion settings. Every loose object (and every `record(string,
 * unknown)`) says `"additionalProperties": true` explicitly, because noema
 * accepts and keeps unknown fields everywhere. Timestamps carry valibot's own
 * pattern next to `format: "date-time"`, so a validator that treats `format`
 * as an annotation (the 2020-12 default) still checks them. Anything else that
 * cannot be converted throws, so a new valibot rule is never dropped silently;
 * the few `check` rules a JSON Schema cannot say are listed in `addRules`.
 */
const CONFIG: ConversionConfig = {
  target: "draft-2020-12",
  errorMode: "throw",
  // Pipes convert from their last schema: `JsonObject` is `custom(not an array)`
  // then `record`, and JSON Schema's "type": "object" already excludes arrays.
  typeMode: "output",
  overrideSchema({ valibotSchema, jsonSchema }) {
    const type = valibotSchema.type;
    if (type === "loose_object") {
      const { required, ...rest } = jsonSchema;
      return {
        ...rest,
        ...(Array.isArray(required) && required.length > 0 ? { required } : {}),
        additionalProperties: true,
      };
    }
    if (type === "record") {
      const { key, value } = valibotSchema as unknown as {
        key: { type: string; pipe?: unknown };
        value: { type: string };
      };
      // A JSON object key is always a string: `propertyNames: {type: "string"}` says nothing.
      if (key.type === "string" && !key.pipe && value.type === "unknown") {
        const { propertyNames: _k, additionalProperties: _v, ...rest } = jsonSchema;
        return { ...rest, additionalProperties: true };
      }
    }
    return undefined;
  },
  overrideAction({ valibotAction, jsonSchema }) {
    if (valibotAction.type === "iso_timestamp") {
      const requirement = (valibotAction as unknown as { requirement: RegExp }).requirement;
      return { ...jsonSchema, format: "date-time", pattern: requirement.source };
    }
    // Custom checks (e.g. summary `insight.metrics.plan_adherence` rounding)
    // have no JSON Schema form; their field descriptions say so.
    if (valibotAction.type === "check") return { ...jsonSchema };
    return undefined;
  },
};

function convert(schema: v.GenericSchema): Json {
  const out = toJsonSchema(schema, CONFIG) as Json;
  delete out.$schema;
  return out;
}

/** The converted {@link Timestamp}, defined once per file as `$defs.timestamp`. */
const TIMESTAMP = convert(Timestamp);
const TIMESTAMP_REF = "#/$defs/timestamp";

/** Replaces every converted timestamp below `node` by a `$ref` to `$defs.timestamp`; true when any was found. */
function refTimestamps(node: unknown, found = { any: false }): unknown {
  if (Array.isArray(node)) return node.map((item) => refTimestamps(item, found));
  if (typeof node !== "object" || node === null) return node;
  const obj = node as Json;
  if (obj.pattern === TIMESTAMP.pattern && obj.format === TIMESTAMP.format && obj.type === "string") {
    const { type: _t, format: _f, pattern: _p, ...rest } = obj;
    found.any = true;
    return { $ref: TIMESTAMP_REF, ...rest };
  }
  const out: Json = {};
  for (const [key, value] of Object.entries(obj)) out[key] = refTimestamps(value, found);
  return out;
}

/** `{"properties": {"phase": {"const": phase}}, "required": ["phase"]}`, the `if` of a phase rule. */
function phaseIs(phase: string): Json {
  return { properties: { phase: { const: phase } }, required: ["phase"] };
}

/**
 * The `$id` of a schema: a URN with the name and the last `/`-separated part
 * of the version (`manifest/1.0` gives `1.0`; state's `1.0/1.0.0` gives its
 * state schema version `1.0.0`).
 *
 * @example
 * ```ts
 * import { schemaId } from "./json_schema.ts";
 * schemaId("event"); // "urn:noema:schema:event:1.3.0"
 * schemaId("manifest"); // "urn:noema:schema:manifest:1.0"
 * ```
 */
export function schemaId(name: SchemaName): string {
  return `urn:noema:schema:${name}:${SCHEMAS[name].version.split("/").at(-1)}`;
}

/** Rules a plain conversion cannot see, added by hand next to their valibot twins. */
function addRules(name: SchemaName, out: Json): void {
  const props = out.properties as Record<string, Json>;
  if (name === "event") {
    out.allOf = [
      {
        description: "phase learn: the payload matches exactly one of form A (pointer) and form B (legacy inline).",
        if: phaseIs("learn"),
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
        description: `phase ${phase}: the payload is a ${phase} payload.`,
        if: phaseIs(phase),
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
            assertions: { type: "array", maxItems: 0 },
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
    const insight = (props.insight as Json).properties as Record<string, Json>;
    const adherence = (insight.metrics.properties as Record<string, Json>).plan_adherence;
    adherence.description = "0 to 1, rounded to 4 decimal places (the rounding is checked by noema validate only).";
  }
  if (name === "manifest") {
    const files = props.files as Json;
    files.description = `${String(files.description)} (Sorted and unique: checked by noema validate only.)`;
    files.not = {
      description: "The manifest never lists itself.",
      contains: { type: "object", properties: { name: { const: "manifest.json" } }, required: ["name"] },
    };
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
  const converted = convert(entry.schema);
  addRules(name, converted);
  const found = { any: false };
  const body = refTimestamps(converted, found) as Json;
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: schemaId(name),
    title: entry.title,
    description:
      `noema artifact contract: ${entry.file} (version ${entry.version}). Unknown properties are allowed and kept.`,
    ...body,
    ...(found.any
      ? {
        $defs: {
          timestamp: {
            description:
              "An RFC 3339 / ISO 8601 date-time with seconds and a time zone (Z or ±hh:mm), on a real calendar date: the pattern is noema's rule for the text, and format date-time (checked by noema validate) rejects Feb 30, Apr 31 and Feb 29 of a common year, which the pattern lets through.",
            ...TIMESTAMP,
          },
        },
      }
      : {}),
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
