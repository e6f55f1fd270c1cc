/**
 * A fast, exact parse of a valid {@link StepRecord}: what `v.safeParse(StepRecord, value).output` is when the parse
 * succeeds, built without valibot's per-field datasets (a planner's 10,000 steps cost about 4 ms through valibot,
 * well under 1 ms here). It decides nothing on its own: anything it does not recognise as valid (a wrong type, a
 * missing field, an unknown kind) is `null`, and the caller asks valibot, which gives the issues. The copy is made as
 * valibot makes it: the fields of the schema in the schema's order (a field present with `undefined` kept), then the
 * other own keys in their order (`__proto__`, `prototype` and `constructor` left out), `inputs` and `outputs` copied
 * one level down the same way, every other value shared.
 *
 * If `StepRecord` changes (a field, a type, an option, a check), {@link fastStepRecord} stops answering (always
 * `null`) until this file follows.
 *
 * @module
 */
import { STEP_KINDS, STEP_STATUSES, StepRecord } from "./plan.ts";

/** The fields this parse knows, in the schema's order. */
const FIELDS = ["id", "kind", "description", "status", "rationale", "inputs", "outputs"];

/** The schema this parse checks as, in the form {@link schemaShape} writes it. */
const KNOWN_SHAPE = `id:string;kind:picklist{${STEP_KINDS.join()}};description:string;` +
  `status:optional(picklist{${STEP_STATUSES.join()}});rationale:optional(string);` +
  "inputs:optional(custom|record);outputs:optional(custom|record)";

/** A valibot schema's type, what it wraps, its options and its pipe's checks (not its metadata), as text. */
function shape(s: Record<string, unknown>): string {
  const sub = (x: unknown) => shape(x as Record<string, unknown>);
  const inner = s.wrapped ? `(${sub(s.wrapped)})` : s.item ? `[${sub(s.item)}]` : "";
  const options = Array.isArray(s.options)
    ? `{${s.options.map((o: unknown) => typeof o === "string" ? o : sub(o)).join(",")}}`
    : "";
  const pipe = Array.isArray(s.pipe)
    ? s.pipe.slice(1).filter((p: { kind?: string }) => p.kind !== "metadata").map((p: { type?: string }) =>
      `|${p.type}`
    )
      .join("")
    : "";
  return `${s.type}${inner}${options}${pipe}`;
}

/** `StepRecord`'s fields, each with its {@link shape}. */
function schemaShape(): string {
  return Object.entries(StepRecord.entries).map(([k, x]) => `${k}:${shape(x as Record<string, unknown>)}`).join(";");
}

/**
 * Whether `StepRecord` is still the schema this parse was written for: the same fields in the same order, of the same
 * types, options and checks (else every answer is `null` and valibot parses every step).
 */
const IN_STEP = StepRecord.type === "loose_object" && schemaShape() === KNOWN_SHAPE;

/** valibot's `_isValidObjectKey`: an own key that is not one of the three that could reach a prototype. */
function validKey(obj: object, key: string): boolean {
  return Object.hasOwn(obj, key) && key !== "__proto__" && key !== "prototype" && key !== "constructor";
}

/** A JSON object (`JsonObject`: not an array) copied as valibot's `record` copies it; null when it is not one. */
function objectCopy(value: unknown): Record<string, unknown> | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const out: Record<string, unknown> = {};
  for (const k in value) if (validKey(value, k)) out[k] = (value as Record<string, unknown>)[k];
  return out;
}

/** The optional fields (`status`, `rationale`, `inputs`, `outputs`) into `out`; false when one is not valid. */
function optionalFields(s: Record<string, unknown>, out: Record<string, unknown>): boolean {
  if ("status" in s) {
    const status = s.status;
    if (status !== undefined && !(STEP_STATUSES as readonly unknown[]).includes(status)) return false;
    out.status = status;
  }
  if ("rationale" in s) {
    const rationale = s.rationale;
    if (rationale !== undefined && typeof rationale !== "string") return false;
    out.rationale = rationale;
  }
  for (const key of ["inputs", "outputs"] as const) {
    if (!(key in s)) continue;
    const value = s[key];
    if (value === undefined) out[key] = undefined;
    else {
      const copy = objectCopy(value);
      if (copy === null) return false;
      out[key] = copy;
    }
  }
  return true;
}

/**
 * `v.safeParse(StepRecord, value).output` for a value that parses, built directly; `null` when the value is not a
 * plain valid step record (then valibot must parse it, and gives the issues). Never a different output.
 *
 * @example
 * ```ts
 * import { fastStepRecord } from "./step_record_fast.ts";
 * fastStepRecord({ kind: "act", id: "s1", description: "Run", x: 1 }); // { id: "s1", kind: "act", description: "Run", x: 1 }
 * fastStepRecord({ id: "s1", kind: "jump", description: "Run" }); // null
 * ```
 */
export function fastStepRecord(value: unknown): StepRecord | null {
  if (!IN_STEP || typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const s = value as Record<string, unknown>;
  if (!("id" in s && "kind" in s && "description" in s)) return null;
  const out: Record<string, unknown> = {};
  const id = s.id;
  if (typeof id !== "string") return null;
  out.id = id;
  const kind = s.kind;
  if (!(STEP_KINDS as readonly unknown[]).includes(kind)) return null;
  out.kind = kind;
  const description = s.description;
  if (typeof description !== "string") return null;
  out.description = description;
  if (!optionalFields(s, out)) return null;
  for (const key in s) if (validKey(s, key) && !FIELDS.includes(key)) out[key] = s[key];
  return out as StepRecord;
}
