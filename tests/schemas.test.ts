/**
 * The generated JSON Schemas (`schemas/*.schema.json`): up to date with the
 * generator, well-formed draft 2020-12 (ajv strict mode), and deciding every
 * instance the same way as the valibot checks `noema validate` runs.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { ErrorObject, ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { readJsonl, SCHEMA_NAMES, type SchemaName, SCHEMAS } from "noema";
import { generateJsonSchema, jsonSchemaText } from "../src/schema/json_schema.ts";
import { ALL_SCHEMA_NAMES, schemaPath, SCHEMAS_DIR, staleSchemas, writeSchemas } from "../scripts/gen-schemas.ts";
import { parse as parseJsonc } from "jsonc-parser";
import { REPO } from "./helpers/cli.ts";
import { VERIFICATION_NOT_PROVIDED } from "./helpers/verification.ts";

// ajv-formats is CommonJS; `.default` is the plugin under both Deno and Bun.
const addFormats = addFormatsModule.default;

type Json = Record<string, unknown>;

const committed = (name: SchemaName): Json => JSON.parse(readFileSync(schemaPath(name), "utf8"));

/** One ajv (draft 2020-12, strict mode, all formats) per schema, compiled from the committed file. */
const validators = new Map<SchemaName, ValidateFunction>();
function ajvFor(name: SchemaName): ValidateFunction {
  let fn = validators.get(name);
  if (!fn) {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats(ajv);
    fn = ajv.compile(committed(name));
    validators.set(name, fn);
  }
  return fn;
}

/**
 * Rules `noema validate` checks that no JSON Schema can say; each schema's
 * description of the field says "checked by noema validate only".
 */
const NOT_IN_JSON_SCHEMA = [/must be sorted by name and unique/, /must be rounded to 4 decimal places/];

/** The valibot verdict on the rules a JSON Schema can express. */
function valibotProblems(name: SchemaName, value: unknown): string[] {
  return SCHEMAS[name].check(value)
    .map((p) => `${p.path}: ${p.message}`)
    .filter((m) => !NOT_IN_JSON_SCHEMA.some((re) => re.test(m)));
}

function ajvErrors(name: SchemaName, value: unknown): string[] {
  const fn = ajvFor(name);
  return fn(value) ? [] : (fn.errors ?? []).map((e: ErrorObject) => `${e.instancePath} ${e.message ?? e.keyword}`);
}

// ---------------------------------------------------------------- instances

const TS = "2026-11-23T09:51:54.123Z";
const HASH = "sha256:" + "ab".repeat(32);
const event = (phase: string, payload: Json, extra: Json = {}): Json => ({
  id: `ev-${phase}`,
  timestamp: TS,
  episode_id: "ep_01K9RBBMXXRSFWR49SXFGF4SPR",
  agent_id: "noema",
  phase,
  payload,
  evidence_ids: [],
  ...extra,
});
const without = (obj: Json, key: string): Json => {
  const { [key]: _dropped, ...rest } = obj;
  return rest;
};
const METRICS = { started_at: TS, completed_at: "2026-11-23T09:51:54.456Z", duration_ms: 333 };
const ACT = {
  action_id: "act-1",
  kind: "shell",
  tool: "shell",
  input_excerpt: "ls -la",
  outcome: "ok",
  result_status: "ok",
  step_id: "step-2",
  step_status: "done",
  provenance: { adapter: "shell" },
  result_artifacts: [{ path: "out.txt" }],
};
const CANDIDATE = {
  schema_version: "action_candidate/1.0",
  action_candidate_id: "ac-1",
  kind: "shell",
  payload: { command: "ls" },
  state_ref: "state.json",
  state_hash: HASH,
  redaction: { applied: false },
  risk_tags: ["fs.read"],
};
const LEARN_A = {
  learn_path: "learn.jsonl",
  learn_schema: "learn/1.0",
  proposal_count: 1,
  proposal_ids: ["p:1"],
  applied: false,
};
const LEARN_B = {
  policy_id: "SqlGuard@1.0",
  basis: { vetoes: 1 },
  proposal: [{ kind: "threshold_tune" }],
  scope: "episode",
};
const STATE = {
  version: "1.0",
  state_schema_version: "1.0.0",
  episode: {
    id: "ep_01K9RBBMXXRSFWR49SXFGF4SPR",
    started_at: TS,
    intuition_mode: "hybrid",
    seed: 7,
    tags: { team: "a" },
  },
  goal: { task: "list files", type: "task" },
  beliefs: [{ statement: "repo is small", confidence: 0.8, provenance: "detect", timestamp: TS }],
  plan: {
    steps: [{ id: "step-1", kind: "detect", description: "Collect context", status: "done" }],
    source: "planner:minimal",
  },
  memory: { facts: [{ key: "cwd", value: "/w" }], scratchpad: "" },
  outcomes: { status: "ok", actions: [{ id: "act-1", kind: "shell", timestamp: TS, "x-note": 1 }], error: null },
  links: { events: "events.jsonl", learn: "learn.jsonl", summary: "summary.json", manifest: "manifest.json" },
  x_writer: "future field",
};
const NOT_PROVIDED = VERIFICATION_NOT_PROVIDED;
const SUMMARY = {
  schema_version: "1.3.0",
  episode_id: "ep_01K9RBBMXXRSFWR49SXFGF4SPR",
  task: "list files",
  started_at: TS,
  duration_sec: 1.5,
  adapter_result: "success",
  outcome: "success_unverified",
  verification: NOT_PROVIDED,
  flags: {
    intuition: true,
    mode: "meta",
    direction: { applied: 1, vetoed: 0, policy: "P@1", threshold: 0.5, last_diff: [] },
  },
  metrics: { success: 1, plan_count: 1, act_count: 1, reflect_count: 0, veto_count: 0, latencies: { total_ms: 1500 } },
  insight: { metrics: { plan_adherence: 0.6667, tool_coverage: 1, branching_factor: 2, plan_revisions: 0 } },
};
const file = (name: string, kind: string) => ({ name, kind, size_bytes: 10, sha256: HASH });
const MANIFEST = {
  schema_version: "manifest/1.0",
  episode_id: "ep_01K9RBBMXXRSFWR49SXFGF4SPR",
  created_at: TS,
  files: [
    file("events.jsonl", "events"),
    file("learn.jsonl", "learn"),
    file("state.json", "state"),
    file("summary.json", "summary"),
  ],
  plugins: [{ id: "adapter:shell", kind: "adapter", path: null, sha256: null }],
  signature: null,
};

interface Case {
  schema: SchemaName;
  label: string;
  value: unknown;
  valid: boolean;
}

const CASES: Case[] = [
  // Events: terminal and other kinds without a payload rule.
  { schema: "event", label: "start event", value: event("start", { task: "list files" }), valid: true },
  { schema: "event", label: "terminate event", value: event("terminate", { status: "ok" }), valid: true },
  {
    schema: "event",
    label: "runtime state projection",
    value: event("runtime", { outcomes: { status: "ok" }, links: {} }, { event_type: "run.state_projection" }),
    valid: true,
  },
  { schema: "event", label: "insight with faculty", value: event("insight", {}, { faculty: "insight" }), valid: true },
  {
    schema: "event",
    label: "unknown fields on event and payload",
    value: event("direction", { directive: "x", extra: [1] }, { faculty: "direction", x_new: { a: 1 } }),
    valid: true,
  },
  { schema: "event", label: "bad faculty", value: event("direction", {}, { faculty: "wisdom" }), valid: false },
  { schema: "event", label: "missing evidence_ids", value: without(event("start", {}), "evidence_ids"), valid: false },
  { schema: "event", label: "payload not an object", value: event("start", [] as unknown as Json), valid: false },
  {
    schema: "event",
    label: "timestamp on February 30",
    value: event("start", {}, { timestamp: "2026-02-30T09:51:54Z" }),
    valid: false,
  },
  {
    schema: "event",
    label: "timestamp on April 31",
    value: event("start", {}, { timestamp: "2026-04-31T09:51:54Z" }),
    valid: false,
  },
  {
    schema: "event",
    label: "timestamp on February 29, 2024",
    value: event("start", {}, { timestamp: "2024-02-29T09:51:54Z" }),
    valid: true,
  },
  {
    schema: "event",
    label: "timestamp without zone",
    value: event("start", {}, { timestamp: "2026-11-23T09:51:54" }),
    valid: false,
  },
  {
    schema: "event",
    label: "metrics complete",
    value: event("act", ACT, { metrics: { ...METRICS, tokens: 12 } }),
    valid: true,
  },
  {
    schema: "event",
    label: "metrics missing duration_ms",
    value: event("act", ACT, { metrics: without(METRICS, "duration_ms") }),
    valid: false,
  },
  {
    schema: "event",
    label: "metrics negative duration_ms",
    value: event("act", ACT, { metrics: { ...METRICS, duration_ms: -1 } }),
    valid: false,
  },
  // act
  { schema: "event", label: "act payload", value: event("act", ACT), valid: true },
  { schema: "event", label: "act missing outcome", value: event("act", without(ACT, "outcome")), valid: false },
  {
    schema: "event",
    label: "act missing input_excerpt",
    value: event("act", without(ACT, "input_excerpt")),
    valid: false,
  },
  { schema: "event", label: "act step_id not a string", value: event("act", { ...ACT, step_id: 2 }), valid: false },
  // action_candidate
  { schema: "event", label: "action_candidate", value: event("action_candidate", CANDIDATE), valid: true },
  {
    schema: "event",
    label: "action_candidate with null id",
    value: event("action_candidate", { ...CANDIDATE, action_candidate_id: null }),
    valid: true,
  },
  {
    schema: "event",
    label: "action_candidate missing state_hash",
    value: event("action_candidate", without(CANDIDATE, "state_hash")),
    valid: false,
  },
  // learn
  { schema: "event", label: "learn form A", value: event("learn", LEARN_A), valid: true },
  { schema: "event", label: "learn form B", value: event("learn", LEARN_B), valid: true },
  {
    schema: "event",
    label: "learn form B with string basis",
    value: event("learn", { ...LEARN_B, basis: "veto" }),
    valid: true,
  },
  { schema: "event", label: "learn both forms", value: event("learn", { ...LEARN_A, ...LEARN_B }), valid: false },
  {
    schema: "event",
    label: "learn neither form",
    value: event("learn", { scope: "episode", proposal_count: 1 }),
    valid: false,
  },
  {
    schema: "event",
    label: "learn form A negative count",
    value: event("learn", { ...LEARN_A, proposal_count: -1 }),
    valid: false,
  },
  // plan
  {
    schema: "event",
    label: "plan with legacy steps",
    value: event("plan", { source: "planner:minimal", steps: ["detect:Collect context", "act:Run"] }),
    valid: true,
  },
  {
    schema: "event",
    label: "plan with step_records",
    value: event("plan", { source: "planner:minimal", step_records: [{ id: "s1", kind: "act", description: "Run" }] }),
    valid: true,
  },
  {
    schema: "event",
    label: "plan legacy label without kind",
    value: event("plan", { steps: ["Collect context"] }),
    valid: false,
  },
  {
    schema: "event",
    label: "plan step_record with unknown kind",
    value: event("plan", { step_records: [{ id: "s1", kind: "dance", description: "Run" }] }),
    valid: false,
  },
  // state
  { schema: "state", label: "state with intuition_mode", value: STATE, valid: true },
  {
    schema: "state",
    label: "state without intuition_mode",
    value: { ...STATE, episode: without(STATE.episode, "intuition_mode") },
    valid: true,
  },
  { schema: "state", label: "state minimal", value: { version: "1.0", state_schema_version: "1.0.0" }, valid: true },
  {
    schema: "state",
    label: "state with what the contract leaves open: any error value, free-form belief and fact timestamps",
    value: {
      ...STATE,
      beliefs: [{ statement: "s", confidence: 0.5, provenance: "p", timestamp: "shortly after the start" }],
      memory: { facts: [{ key: "k", value: 1, timestamp: "t+3" }] },
      outcomes: { status: "error", error: { code: 3, detail: ["x"] } },
    },
    valid: true,
  },
  {
    schema: "state",
    label: "state episode.started_at on April 31",
    value: { ...STATE, episode: { ...STATE.episode, started_at: "2026-04-31T00:00:00Z" } },
    valid: false,
  },
  {
    schema: "state",
    label: "state bad intuition_mode",
    value: { ...STATE, episode: { ...STATE.episode, intuition_mode: "psychic" } },
    valid: false,
  },
  { schema: "state", label: "state wrong version", value: { ...STATE, version: "2.0" }, valid: false },
  {
    schema: "state",
    label: "state wrong state_schema_version",
    value: { ...STATE, state_schema_version: "1.0" },
    valid: false,
  },
  {
    schema: "state",
    label: "state belief confidence above 1",
    value: { ...STATE, beliefs: [{ statement: "s", confidence: 1.5, provenance: "p" }] },
    valid: false,
  },
  {
    schema: "state",
    label: "state unknown outcome status",
    value: { ...STATE, outcomes: { status: "done" } },
    valid: false,
  },
  // summary
  { schema: "summary", label: "summary not provided, block correct", value: SUMMARY, valid: true },
  {
    schema: "summary",
    label: "summary not provided but passed true",
    value: { ...SUMMARY, verification: { ...NOT_PROVIDED, passed: true } },
    valid: false,
  },
  {
    schema: "summary",
    label: "summary not provided but assertions listed",
    value: {
      ...SUMMARY,
      verification: { ...NOT_PROVIDED, assertions: [{ name: "file_exists", target: "a", passed: true, reason: null }] },
    },
    valid: false,
  },
  {
    schema: "summary",
    label: "summary not provided but workspace_diff set",
    value: { ...SUMMARY, verification: { ...NOT_PROVIDED, workspace_diff: { added: [], modified: [], deleted: [] } } },
    valid: false,
  },
  {
    schema: "summary",
    label: "summary provided and passed",
    value: {
      ...SUMMARY,
      outcome: "success",
      verification: {
        ...NOT_PROVIDED,
        provided: true,
        passed: true,
        assertions: [{ name: "file_exists", target: "out.txt", passed: true, reason: null }],
        workspace_diff: { added: ["out.txt"], modified: [], deleted: [] },
        snapshots: { pre: "snapshots/pre.json", post: "snapshots/post.json" },
      },
    },
    valid: true,
  },
  {
    schema: "summary",
    label: "summary with assertion and workspace diff items of another shape (the contract does not show them)",
    value: {
      ...SUMMARY,
      outcome: "success",
      verification: {
        ...NOT_PROVIDED,
        provided: true,
        passed: true,
        assertions: [{ check: "exists", path: "out.txt", ok: true }, "out.txt exists"],
        workspace_diff: { added: [{ path: "out.txt", bytes: 3 }], modified: [], deleted: [] },
      },
    },
    valid: true,
  },
  {
    schema: "summary",
    label: "summary started_at on February 29 of a common year",
    value: { ...SUMMARY, started_at: "2025-02-29T09:51:54.123Z" },
    valid: false,
  },
  {
    schema: "summary",
    label: "summary verification error with passed null",
    value: { ...SUMMARY, verification: { ...NOT_PROVIDED, provided: true, error: "workspace_unavailable" } },
    valid: true,
  },
  {
    schema: "summary",
    label: "summary verification error but passed false",
    value: {
      ...SUMMARY,
      verification: { ...NOT_PROVIDED, provided: true, passed: false, error: "workspace_unavailable" },
    },
    valid: false,
  },
  {
    schema: "summary",
    label: "summary wrong schema_version",
    value: { ...SUMMARY, schema_version: "1.2.0" },
    valid: false,
  },
  { schema: "summary", label: "summary missing verification", value: without(SUMMARY, "verification"), valid: false },
  {
    schema: "summary",
    label: "summary metrics success 2",
    value: { ...SUMMARY, metrics: { ...SUMMARY.metrics, success: 2 } },
    valid: false,
  },
  // manifest
  { schema: "manifest", label: "manifest", value: MANIFEST, valid: true },
  {
    schema: "manifest",
    label: "manifest listing itself",
    value: {
      ...MANIFEST,
      files: [...MANIFEST.files.slice(0, 2), file("manifest.json", "custom"), ...MANIFEST.files.slice(2)],
    },
    valid: false,
  },
  {
    schema: "manifest",
    label: "manifest bad digest",
    value: { ...MANIFEST, files: [{ ...file("a", "custom"), sha256: "md5:00" }] },
    valid: false,
  },
  // learn.jsonl
  {
    schema: "learn",
    label: "learn record",
    value: {
      schema_version: "learn/1.0",
      id: "P@1:ep_1",
      episode_id: "ep_1",
      agent_id: "P@1",
      timestamp: TS,
      payload: {
        proposal: [{ proposal_id: "p:1", kind: "threshold_tune", target: { path: "t", from: 0.5, to: 0.55 } }],
      },
    },
    valid: true,
  },
  {
    schema: "learn",
    label: "learn record wrong schema_version",
    value: {
      schema_version: "learn/2.0",
      id: "x",
      episode_id: "e",
      agent_id: "a",
      timestamp: TS,
      payload: { proposal: [] },
    },
    valid: false,
  },
];

// -------------------------------------------------------------------- tests

describe("generated schema files", () => {
  for (const name of SCHEMA_NAMES) {
    test(`schemas/${name}.schema.json is what the generator writes`, () => {
      const path = schemaPath(name);
      assert.ok(existsSync(path), `${path} is missing; run: npm run gen:schemas`);
      assert.equal(readFileSync(path, "utf8"), jsonSchemaText(name), `${path} is stale; run: npm run gen:schemas`);
    });
  }

  for (const name of ["task", "noema"] as const) {
    test(`schemas/${name}.schema.json (an input file's) is what the generator writes`, () => {
      const stale = staleSchemas().filter((s) => s.name === name);
      assert.deepEqual(stale, [], `schemas/${name}.schema.json is stale; run: npm run gen:schemas`);
    });
  }

  test("the examples' task files validate against the task schema they name; a typo or a bad kind does not", () => {
    // Found by a newcomer run: the examples named ../schemas/task.schema.json, which did not exist.
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const check = ajv.compile(JSON.parse(readFileSync(join(SCHEMAS_DIR, "task.schema.json"), "utf8")));
    const files = readdirSync(join(REPO, "examples")).filter((f) => f.endsWith(".jsonc"));
    assert.ok(files.length >= 5);
    for (const f of files) {
      const text = readFileSync(join(REPO, "examples", f), "utf8");
      const named = /"\$schema":\s*"([^"]+)"/.exec(text)?.[1];
      if (named !== undefined) assert.ok(existsSync(join(REPO, "examples", named)), `${f}: ${named} exists`);
      assert.ok(check(parseJsonc(text)), `${f}: ${JSON.stringify(check.errors)}`);
    }
    assert.ok(!check({ task: "x", polices: ["p.ts"] }), "an unknown key");
    assert.ok(!check({ task: "x", steps: ["deploy:it"] }), "a step of no kind");
    assert.ok(!check({ task: "x", steps: [{ kind: "act" }] }), "a step without a description");
    assert.ok(check({ task: "x", steps: ["act:one\ntwo", { kind: "review", description: "look" }] }));
    const config = ajv.compile(JSON.parse(readFileSync(join(SCHEMAS_DIR, "noema.schema.json"), "utf8")));
    assert.ok(config({ governance: "enforce", rules: { deny: ["Bash(git push:*)"] } }));
    assert.ok(!config({ governance: "enforced" }), "a value not among the choices");
  });

  test("the staleness check reports a missing or edited file and writeSchemas fixes it", () => {
    const dir = mkdtempSync(join(tmpdir(), "noema-schemas-"));
    try {
      assert.deepEqual(staleSchemas(dir).map((s) => s.reason), ALL_SCHEMA_NAMES.map(() => "missing"));
      assert.equal(writeSchemas(dir).length, ALL_SCHEMA_NAMES.length);
      assert.deepEqual(staleSchemas(dir), []);
      const path = schemaPath("event", dir);
      writeFileSync(path, readFileSync(path, "utf8").replace('"required"', '"optional"'));
      assert.deepEqual(staleSchemas(dir).map((s) => [s.name, s.reason]), [["event", "differs"]]);
      assert.deepEqual(writeSchemas(dir), [path]);
      assert.deepEqual(staleSchemas(dir), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("there is exactly one file per registry name and input file", () => {
    const files = readdirSync(SCHEMAS_DIR).filter((f) => f.endsWith(".schema.json")).sort();
    assert.deepEqual(files, ALL_SCHEMA_NAMES.map((n) => `${n}.schema.json`).sort());
  });
});

/** Every subschema of type object, except `not` subtrees (they match what is forbidden). */
function objectNodes(node: unknown, path = "#", out: [string, Json][] = []): [string, Json][] {
  if (Array.isArray(node)) node.forEach((item, i) => objectNodes(item, `${path}/${i}`, out));
  else if (typeof node === "object" && node !== null) {
    const obj = node as Json;
    if (obj.type === "object") out.push([path, obj]);
    for (const [key, value] of Object.entries(obj)) if (key !== "not") objectNodes(value, `${path}/${key}`, out);
  }
  return out;
}

describe("schema content", () => {
  for (const name of SCHEMA_NAMES) {
    test(`${name}: draft 2020-12 with $id and title, compiles in ajv strict mode`, () => {
      const s = committed(name);
      assert.equal(s.$schema, "https://json-schema.org/draft/2020-12/schema");
      assert.match(String(s.$id), new RegExp(`^urn:noema:schema:${name}:\\d+\\.\\d+(\\.\\d+)?$`));
      assert.equal(s.title, SCHEMAS[name].title);
      assert.equal(typeof ajvFor(name), "function");
    });

    test(`${name}: every object says additionalProperties: true`, () => {
      const nodes = objectNodes(committed(name));
      assert.ok(nodes.length > 0);
      const closed = nodes.filter(([, n]) => n.additionalProperties !== true).map(([p]) => p);
      assert.deepEqual(closed, []);
    });
  }

  test("event: phase rules for learn (oneOf A/B), action_candidate, act and plan", () => {
    const allOf = committed("event").allOf as Json[];
    const phases = allOf.map((r) => ((r.if as Json).properties as { phase: { const: string } }).phase.const);
    assert.deepEqual(phases, ["learn", "action_candidate", "act", "plan"]);
    const payloads = allOf.map((r) => ((r.then as Json).properties as { payload: Json }).payload);
    const forms = payloads[0].oneOf as Json[];
    assert.deepEqual(forms.map((f) => f.required), [
      ["learn_path", "learn_schema", "proposal_count", "proposal_ids"],
      ["policy_id", "basis", "proposal", "scope"],
    ]);
    assert.ok((payloads[1].required as string[]).includes("state_hash"));
    assert.deepEqual(payloads[2].required, ["input_excerpt", "outcome"]);
    assert.equal(payloads[3].title, "plan payload");
  });

  test("summary: the not-provided and verification-error rules", () => {
    const verification = (committed("summary").properties as Record<string, Json>).verification;
    const rules = verification.allOf as Json[];
    assert.equal(rules.length, 2);
    assert.deepEqual(((rules[0].if as Json).properties as Json).provided, { const: false });
    assert.deepEqual(Object.keys((rules[0].then as Json).properties as Json), [
      "passed",
      "assertions",
      "workspace_diff",
      "snapshots",
    ]);
  });

  test("the generator output is plain JSON (no undefined, no functions)", () => {
    for (const name of SCHEMA_NAMES) {
      assert.deepEqual(JSON.parse(JSON.stringify(generateJsonSchema(name))), generateJsonSchema(name));
    }
  });
});

describe("ajv and valibot agree", () => {
  test("the table covers every schema", () => {
    assert.deepEqual([...new Set(CASES.map((c) => c.schema))].sort(), [...SCHEMA_NAMES].sort());
    assert.ok(CASES.length >= 25);
  });

  for (const c of CASES) {
    test(`${c.schema}: ${c.label} is ${c.valid ? "valid" : "invalid"}`, () => {
      const byValibot = valibotProblems(c.schema, c.value);
      const byAjv = ajvErrors(c.schema, c.value);
      assert.equal(byValibot.length === 0, c.valid, `valibot: ${JSON.stringify(byValibot)}`);
      assert.equal(byAjv.length === 0, c.valid, `ajv: ${JSON.stringify(byAjv)}`);
    });
  }

  test("rules no JSON Schema can say are the only difference, and are documented", () => {
    const unsorted = { ...MANIFEST, files: [...MANIFEST.files].reverse() };
    assert.deepEqual(ajvErrors("manifest", unsorted), []);
    assert.match(SCHEMAS.manifest.check(unsorted)[0].message, NOT_IN_JSON_SCHEMA[0]);
    assert.deepEqual(valibotProblems("manifest", unsorted), []);
    const rounding = { ...SUMMARY, insight: { metrics: { plan_adherence: 0.66667 } } };
    assert.deepEqual(ajvErrors("summary", rounding), []);
    assert.match(SCHEMAS.summary.check(rounding)[0].message, NOT_IN_JSON_SCHEMA[1]);
    assert.match(readFileSync(schemaPath("manifest"), "utf8"), /Sorted and unique: checked by noema validate only/);
    assert.match(readFileSync(schemaPath("summary"), "utf8"), /rounding is checked by noema validate only/);
  });
});

// Fixtures written by other engineers, when present: every artifact line gets the same verdict.
const FIXTURES = join(import.meta.dirname ?? ".", "..", "testdata", "episodes");
const ARTIFACT_SCHEMAS: Record<string, SchemaName> = {
  "events.jsonl": "event",
  "learn.jsonl": "learn",
  "state.json": "state",
  "summary.json": "summary",
  "manifest.json": "manifest",
};

function artifactFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) artifactFiles(path, out);
    else if (Object.hasOwn(ARTIFACT_SCHEMAS, entry)) out.push(path);
  }
  return out;
}

if (existsSync(FIXTURES)) {
  test("fixtures under testdata/episodes: ajv and valibot agree on every artifact", () => {
    const disagreements: string[] = [];
    let checked = 0;
    for (const path of artifactFiles(FIXTURES)) {
      const name = ARTIFACT_SCHEMAS[path.split(/[\\/]/).at(-1)!];
      const values: [string, unknown][] = [];
      if (path.endsWith(".jsonl")) {
        for (const entry of readJsonl(path)) if (!entry.problem) values.push([`${path}:${entry.line}`, entry.value]);
      } else {
        try {
          values.push([path, JSON.parse(readFileSync(path, "utf8"))]);
        } catch {
          continue; // not JSON at all: a fixture for the parser, not for the schema
        }
      }
      for (const [where, value] of values) {
        checked++;
        const v = valibotProblems(name, value), a = ajvErrors(name, value);
        if ((v.length === 0) !== (a.length === 0)) {
          disagreements.push(`${where}: valibot ${JSON.stringify(v)} / ajv ${JSON.stringify(a)}`);
        }
      }
    }
    assert.deepEqual(disagreements, [], `${disagreements.length} of ${checked} artifacts differ`);
  });
}

after(() => validators.clear());
