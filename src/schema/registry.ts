/**
 * The artifact schemas by name, with the checks `noema validate` runs on each.
 *
 * @module
 */
import * as v from "valibot";
import { CONTRACT_VERSIONS } from "../version.ts";
import { checkEvent, EventRecord } from "./event.ts";
import { LearnRecord } from "./learn_record.ts";
import { checkManifest, Manifest } from "./manifest.ts";
import { type SchemaProblem, toProblems } from "./problems.ts";
import { State } from "./state.ts";
import { checkSummary, Summary } from "./summary.ts";

/** Names of the artifact schemas. */
export const SCHEMA_NAMES = ["event", "state", "summary", "manifest", "learn"] as const;
/** The name of an artifact schema. */
export type SchemaName = (typeof SCHEMA_NAMES)[number];

/** One entry of the schema registry. */
export interface SchemaEntry {
  /** Registry name, also the file stem under `schemas/`. */
  name: SchemaName;
  /** Human title of the JSON Schema. */
  title: string;
  /** Version of the shape. */
  version: string;
  /** The artifact file the schema describes. */
  file: string;
  /** The valibot schema. */
  schema: v.GenericSchema;
  /** Full check: schema plus rules a JSON Schema cannot say. */
  check(value: unknown): SchemaProblem[];
}

function plainCheck(schema: v.GenericSchema): (value: unknown) => SchemaProblem[] {
  return (value) => {
    const r = v.safeParse(schema, value);
    return r.success ? [] : toProblems(r.issues);
  };
}

/**
 * Every artifact schema by name.
 *
 * @example
 * ```ts
 * import { SCHEMAS } from "./registry.ts";
 * SCHEMAS.state.check({ version: "1.0", state_schema_version: "1.0.0" }); // []
 * ```
 */
export const SCHEMAS: Record<SchemaName, SchemaEntry> = {
  event: {
    name: "event",
    title: "event record",
    version: CONTRACT_VERSIONS.event,
    file: "events.jsonl",
    schema: EventRecord,
    check: checkEvent,
  },
  state: {
    name: "state",
    title: "state.json",
    version: `${CONTRACT_VERSIONS.state}/${CONTRACT_VERSIONS.state_schema}`,
    file: "state.json",
    schema: State,
    check: plainCheck(State),
  },
  summary: {
    name: "summary",
    title: "summary.json",
    version: CONTRACT_VERSIONS.summary,
    file: "summary.json",
    schema: Summary,
    check: checkSummary,
  },
  manifest: {
    name: "manifest",
    title: "manifest.json",
    version: CONTRACT_VERSIONS.manifest,
    file: "manifest.json",
    schema: Manifest,
    check: checkManifest,
  },
  learn: {
    name: "learn",
    title: "learn.jsonl line",
    version: CONTRACT_VERSIONS.learn,
    file: "learn.jsonl",
    schema: LearnRecord,
    check: plainCheck(LearnRecord),
  },
};

/**
 * Whether a string names a schema in the registry.
 *
 * @example
 * ```ts
 * import { isSchemaName } from "./registry.ts";
 * isSchemaName("event"); // true
 * ```
 */
export function isSchemaName(name: string): name is SchemaName {
  return (SCHEMA_NAMES as readonly string[]).includes(name);
}
