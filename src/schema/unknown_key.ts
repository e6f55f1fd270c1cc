/**
 * A key a strict object does not know: valibot reports it as `expected
 * never` with the key as the issue's input; these helpers tell such an issue
 * apart and find the keys the object does know, for a did-you-mean.
 *
 * @module
 */
import type * as v from "valibot";

/** The parts of a valibot schema the walk reads. */
interface SchemaNode {
  type?: string;
  entries?: Record<string, SchemaNode>;
  item?: SchemaNode;
  value?: SchemaNode;
  wrapped?: SchemaNode;
  options?: SchemaNode[];
  key?: string;
  getter?: (input: unknown) => SchemaNode;
}

/**
 * Whether a valibot issue is a key that a strict object does not know.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { isUnknownKeyIssue } from "./unknown_key.ts";
 * const r = v.safeParse(v.strictObject({ a: v.string() }), { a: "x", b: 1 });
 * if (!r.success) isUnknownKeyIssue(r.issues[0]); // true
 * ```
 */
export function isUnknownKeyIssue(issue: v.BaseIssue<unknown>): boolean {
  return issue.kind === "schema" && issue.type === "strict_object" && issue.expected === "never";
}

const rec = (x: unknown): Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x) ? x as Record<string, unknown> : {};

/** The schema that validates `input`: through lazy, optional/nullable wrappers and a variant's matching option. */
function resolve(schema: SchemaNode | undefined, input: unknown): SchemaNode | undefined {
  for (let s = schema, hops = 0; s !== undefined && hops < 32; hops++) {
    if (s.getter) s = s.getter(input);
    else if (s.wrapped) s = s.wrapped;
    else if (s.type === "variant" && s.options && s.key) {
      const tag = rec(input)[s.key];
      s = s.options.find((o) => rec(rec(o.entries)[s!.key!]).literal === tag);
    } else return s;
  }
  return undefined;
}

/** The schema of the member `key` of a value `schema` validates. */
function member(schema: SchemaNode | undefined, key: unknown): SchemaNode | undefined {
  if (schema?.entries) return typeof key === "string" ? schema.entries[key] : undefined;
  return schema?.item ?? schema?.value;
}

/**
 * The keys the strict object of an unknown-key issue knows, found by walking
 * `schema` (the schema that was parsed) along the issue's path; `undefined`
 * when the walk cannot tell (a union).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { knownKeysAt } from "./unknown_key.ts";
 * const s = v.object({ steps: v.array(v.strictObject({ inputs: v.string() })) });
 * const r = v.safeParse(s, { steps: [{ inputs: "x", input: "y" }] });
 * if (!r.success) knownKeysAt(s, r.issues[0]); // ["inputs"]
 * ```
 */
export function knownKeysAt(schema: v.GenericSchema, issue: v.BaseIssue<unknown>): string[] | undefined {
  const path = issue.path ?? [];
  if (path.length === 0) return undefined;
  let node: SchemaNode | undefined = schema as unknown as SchemaNode;
  for (const item of path.slice(0, -1)) {
    node = member(resolve(node, item.input), (item as { key: unknown }).key);
  }
  const object = resolve(node, path[path.length - 1].input);
  return object?.entries ? Object.keys(object.entries) : undefined;
}
