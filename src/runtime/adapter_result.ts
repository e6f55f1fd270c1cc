/**
 * Adapter results are checked before they are recorded. An adapter may
 * return anything, throw anything, or never settle; what reaches the `act`
 * event is always a well-formed result:
 *
 * - the result is first copied into plain JSON data ({@link toPlainJson}):
 *   `output` within the output limit, the rest (status, outcome, error,
 *   artifacts, facts) within the same limit, `outcome` at most 8 KiB;
 * - the copy is checked with valibot ({@link ActResultSchema}): `status` is
 *   `ok`, `error` or `skipped`, `outcome` a string, `error` `{ type, message }`,
 *   `artifacts` an array of `{ path, kind? }` objects, `facts` an array of
 *   `{ key, value }` objects, `exit_code` a number or null;
 * - a result that fails the check, an adapter that throws (an `Error` or
 *   anything else) and a call that does not settle within the act timeout
 *   all become an `error` result whose message names the adapter file and
 *   the field, e.g. `adapter ./my.ts: result.artifacts[0]: expected an
 *   object, got string`.
 *
 * Settings (the adapter's config, i.e. the task file `adapter` object or
 * `run({ adapter })`): `act_timeout_ms` (default 7 200 000, two hours: above
 * the built-in adapters' own process timeouts, so they report first) and
 * `output_limit_bytes` (default 1 MiB). On the timeout the request's `signal`
 * is aborted, so an adapter that honours it stops its child process.
 *
 * @module
 */
import * as v from "valibot";
import { relative } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import { adapterNumberProblem } from "./adapter_keys.ts";
import type { ActRequest, ActResult, AdapterInstance } from "../plugins/api.ts";
import { copyPlainJson, cutString, PLUGIN_LIMITS, toPlainJson } from "../plugins/plain_json.ts";
import { describeThrown } from "../plugins/thrown.ts";
import { jsonType } from "../json.ts";
import { textHead } from "../text_head.ts";

/**
 * Defaults of the adapter guard.
 *
 * @example
 * ```ts
 * import { ADAPTER_GUARD_DEFAULTS } from "noema";
 * ADAPTER_GUARD_DEFAULTS.act_timeout_ms; // 7200000
 * ```
 */
export const ADAPTER_GUARD_DEFAULTS = {
  act_timeout_ms: 2 * 60 * 60 * 1000,
  output_limit_bytes: PLUGIN_LIMITS.adapterOutputBytes,
} as const;

const str = (what = "a string") => v.string(`expected ${what}`);
const STATUS_MESSAGE = 'expected "ok", "error" or "skipped"';

/**
 * What a checked adapter result looks like (after the plain-JSON copy).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ActResultSchema } from "noema";
 * v.is(ActResultSchema, { status: "ok", artifacts: [{ path: "out.txt" }] }); // true
 * v.is(ActResultSchema, { status: "ok", artifacts: ["out.txt"] }); // false
 * ```
 */
export const ActResultSchema = v.object({
  status: v.picklist(["ok", "error", "skipped"], STATUS_MESSAGE),
  outcome: v.optional(str()),
  output: v.optional(v.unknown()),
  error: v.nullish(v.object({ type: str(), message: str() }, "expected an object { type, message }")),
  artifacts: v.optional(
    v.array(
      v.looseObject({ path: str(), kind: v.optional(str()) }, "expected an object { path, kind? }"),
      "expected an array",
    ),
  ),
  facts: v.optional(
    v.array(
      v.looseObject({ key: str(), value: v.unknown() }, "expected an object { key, value }"),
      "expected an array",
    ),
  ),
  exit_code: v.optional(v.nullable(v.number("expected a number or null"))),
}, "expected an object");

/** Options of the adapter guard. */
export interface AdapterGuardOptions {
  /** How the adapter is named in messages: `./my.ts` for a file, the name for a built-in. */
  adapter: string;
  /** The adapter's file (absolute), to say where in it a throw happened (`error.at`). @default {null} */
  file?: string | null;
  /** Longest time one `act` call may take. @default {7200000} */
  actTimeoutMs?: number;
  /** Most bytes of `output` (and of the rest of the result) as JSON text. @default {1048576} */
  outputLimitBytes?: number;
}

/** A guard key's value: undefined when absent; out of range (`adapterNumberProblem`), a usage error. */
function guardNumber(config: Record<string, unknown>, key: string, adapter: string): number | undefined {
  const value = config[key];
  if (value === undefined) return undefined;
  const problem = adapterNumberProblem(key, value);
  if (problem) {
    throw new NoemaError("bad_adapter", `adapter ${adapter}: adapter.${key}: ${problem}`, { exitCode: EXIT.USAGE });
  }
  return value as number;
}

/**
 * The guard options for an adapter from its config (`act_timeout_ms`,
 * `output_limit_bytes`); a bad value is a usage error naming the field.
 *
 * @example
 * ```ts
 * import { adapterGuardOptions } from "noema";
 * adapterGuardOptions("shell", { act_timeout_ms: 1000 }).actTimeoutMs; // 1000
 * ```
 */
export function adapterGuardOptions(
  adapter: string,
  config: Record<string, unknown>,
  file: string | null = null,
): AdapterGuardOptions {
  return {
    adapter,
    file,
    actTimeoutMs: guardNumber(config, "act_timeout_ms", adapter),
    outputLimitBytes: guardNumber(config, "output_limit_bytes", adapter),
  };
}

/**
 * How to name an adapter in messages: its file relative to the working
 * directory (`./my.ts`), else its label.
 *
 * @example
 * ```ts
 * import { adapterDisplayName } from "noema";
 * adapterDisplayName(null, "shell"); // "shell"
 * ```
 */
export function adapterDisplayName(path: string | null, label: string): string {
  if (!path) return label;
  const rel = relative(process.cwd(), path);
  return rel === "" || rel.startsWith("..") || /^[a-zA-Z]:|^\//.test(rel) ? path : `./${rel}`;
}

/** `jsonType`, for values that may be hostile (a revoked proxy throws on `Array.isArray`). */
function typeWord(value: unknown): string {
  try {
    return jsonType(value);
  } catch {
    return typeof value;
  }
}

function invalid(adapter: string, message: string): ActResult {
  return {
    status: "error",
    outcome: "invalid adapter result",
    error: { type: "InvalidAdapterResult", message: `adapter ${adapter}: ${message}` },
  };
}

function read(o: object, key: string): unknown {
  try {
    return (o as Record<string, unknown>)[key];
  } catch (e) {
    return `[unreadable: ${textHead(describeThrown(e).message, 120)}]`;
  }
}

/**
 * Checks what an adapter returned and copies it into plain JSON data. Never
 * throws: a bad result comes back as an `error` result naming the field.
 *
 * @example
 * ```ts
 * import { checkAdapterResult } from "noema";
 * checkAdapterResult({ status: "ok", artifacts: ["x.txt"] }, { adapter: "./my.ts" }).error?.message;
 * // "adapter ./my.ts: result.artifacts[0]: expected an object { path, kind? }, got string"
 * ```
 */
export function checkAdapterResult(raw: unknown, options: AdapterGuardOptions): ActResult {
  const limit = options.outputLimitBytes ?? ADAPTER_GUARD_DEFAULTS.output_limit_bytes;
  let isObject = false;
  try {
    isObject = typeof raw === "object" && raw !== null && !Array.isArray(raw);
  } catch {
    // a revoked proxy: not a result
  }
  if (!isObject) return invalid(options.adapter, `result: expected an object, got ${typeWord(raw)}`);
  const o = raw as object;
  const rest: Record<string, unknown> = {};
  for (const key of ["status", "outcome", "error", "artifacts", "facts", "exit_code"]) rest[key] = read(o, key);
  const { value, truncated } = copyPlainJson(rest, { maxBytes: limit });
  const copy = value as Record<string, unknown>;
  if (typeof copy.outcome === "string") copy.outcome = cutString(copy.outcome, PLUGIN_LIMITS.adviceBytes);
  const output = read(o, "output");
  if (output !== undefined) copy.output = toPlainJson(output, { maxBytes: limit });
  const parsed = v.safeParse(ActResultSchema, copy);
  if (parsed.success) {
    const { error, ...result } = parsed.output as ActResult;
    if (error) {
      (result as ActResult).error = {
        ...error,
        type: cutString(error.type, 200),
        message: cutString(error.message, PLUGIN_LIMITS.adviceBytes),
      };
    }
    return result as ActResult;
  }
  const issue = parsed.issues[0];
  if (truncated) {
    // The cut (a marker in place of an artifact or fact) is what failed: say so, not which field it hit.
    return invalid(options.adapter, `result: larger than ${limit} bytes as JSON (adapter.output_limit_bytes)`);
  }
  const path = (issue.path ?? []).map((p) => typeof p.key === "number" ? `[${p.key}]` : `.${String(p.key)}`).join("");
  // A missing key is reported by its object's schema: say what the key itself expects.
  const missing = issue.input === undefined && /object/.test(issue.type) && (issue.path?.length ?? 0) > 0;
  const key = issue.path?.at(-1)?.key;
  const expected = !missing
    ? issue.message
    : key === "status"
    ? STATUS_MESSAGE
    : key === "value"
    ? "expected a value"
    : "expected a string";
  const got = issue.type === "picklist" && typeof issue.input === "string"
    ? JSON.stringify(cutString(issue.input, 60))
    : typeWord(issue.input);
  return invalid(options.adapter, `result${path}: ${expected}, got ${got}`);
}

const guarded = new WeakSet<AdapterInstance>();

/**
 * The request signal of a run given none: never aborted (its controller is
 * not kept anywhere), so the guard links nothing to it.
 *
 * @example
 * ```ts
 * import { NEVER_ABORTED } from "./adapter_result.ts";
 * NEVER_ABORTED.aborted; // false, for ever
 * ```
 */
export const NEVER_ABORTED: AbortSignal = new AbortController().signal;

/** What the act timer resolves with. */
const TIMED_OUT = Symbol("timeout");

/** Whether `act` returned a promise (anything with a `then` method; reading it may throw: caught by the caller). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null &&
    typeof (value as { then?: unknown }).then === "function";
}

/**
 * Calls `act` with the guard: a throw (of anything), a call that does not
 * settle within the act timeout (the request's signal is then aborted) and a
 * bad result all come back as `error` results. Never throws. An instance made
 * by {@link guardAdapter} is called as is (it already guards itself).
 *
 * @example
 * ```ts
 * import { callAdapter } from "noema";
 * // const result = await callAdapter(instance, request, { adapter: "./my.ts", actTimeoutMs: 60_000 });
 * ```
 */
export async function callAdapter(
  instance: AdapterInstance,
  request: ActRequest,
  options: AdapterGuardOptions,
): Promise<ActResult> {
  if (guarded.has(instance)) return instance.act(request);
  const ms = options.actTimeoutMs ?? ADAPTER_GUARD_DEFAULTS.act_timeout_ms;
  const abort = new AbortController();
  const onAbort = () => abort.abort(request.signal.reason);
  // A signal that can never abort needs no link (adding and removing a listener is most of the guard's own cost).
  const linked = request.signal !== NEVER_ABORTED;
  if (request.signal.aborted) onAbort();
  else if (linked) request.signal.addEventListener("abort", onAbort, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const returned: unknown = instance.act({ ...request, signal: abort.signal });
    // A result returned, not promised, has settled: no timer to race it against.
    if (!isThenable(returned)) return checkAdapterResult(returned, options);
    const raw = await Promise.race([
      returned,
      new Promise<typeof TIMED_OUT>((resolve) => {
        timer = setTimeout(() => resolve(TIMED_OUT), ms);
      }),
    ]);
    if (raw === TIMED_OUT) {
      abort.abort(new Error(`act timed out after ${ms} ms`));
      return {
        status: "error",
        outcome: "adapter timed out",
        error: {
          type: "AdapterTimeout",
          message: `adapter ${options.adapter}: act did not settle within ${ms} ms (adapter.act_timeout_ms)`,
        },
      };
    }
    return checkAdapterResult(raw, options);
  } catch (e) {
    return { status: "error", outcome: "adapter threw", error: describeThrown(e, options.file ?? null) };
  } finally {
    clearTimeout(timer);
    if (linked) request.signal.removeEventListener("abort", onAbort);
  }
}

/**
 * Wraps an adapter instance (what `create` returned) so that `act` never
 * throws, never hangs past the act timeout and returns a checked result, and
 * `close` never throws (a failure is reported on stderr). A value that is not
 * an adapter instance is a usage error naming the adapter.
 *
 * @example
 * ```ts
 * import { guardAdapter } from "noema";
 * const safe = guardAdapter({ act: () => ({ status: "ok", artifacts: "x.txt" }) }, { adapter: "./my.ts" });
 * // (await safe.act(request)).error.message: "adapter ./my.ts: result.artifacts: expected an array, got string"
 * ```
 */
export function guardAdapter(instance: unknown, options: AdapterGuardOptions): AdapterInstance {
  let act: unknown;
  try {
    act = (instance as AdapterInstance | null)?.act;
  } catch {
    act = undefined;
  }
  if (typeof instance !== "object" || instance === null || typeof act !== "function") {
    throw new NoemaError(
      "bad_adapter",
      `adapter ${options.adapter}: create() returned ${typeWord(instance)}, expected an object { act(request) }`,
      { exitCode: EXIT.USAGE },
    );
  }
  const inner = instance as AdapterInstance;
  if (guarded.has(inner)) return inner;
  const safe: AdapterInstance = {
    act: (request) => callAdapter(inner, request, options),
    close: async () => {
      try {
        await inner.close?.();
      } catch (e) {
        const d = describeThrown(e);
        process.stderr.write(`noema: adapter ${options.adapter}: close() failed: ${d.type}: ${d.message}\n`);
      }
    },
  };
  guarded.add(safe);
  return safe;
}
