/**
 * The worker side of policy isolation (see `policy_host.ts`): loads policy
 * files and answers `advise` calls, off the main thread, so that a policy
 * that loops forever can be stopped by terminating this worker.
 *
 * Messages in: `load {handle, path}`, `advise {call, handle, parts, method?}` (`method: "review"` calls
 * `review` instead),
 * `mask {call, value, patterns}` (a `redact` verdict's patterns applied to the result here, where the
 * policy's timeout and memory cap hold), `release {handle}`. Messages out: `ready`, `loaded {handle, id, name,
 * version, review}`, `load_error {handle, message, exitCode}`, `result {call, value}` (a plain JSON copy),
 * `error {call, name, message, at?}`, `output {label, text}` (what the policy printed: its `console` and
 * `process.stdout`/`stderr` are replaced here, so nothing it prints reaches the process's stdout).
 *
 * The state arrives in parts (one per top-level key); a part marked `same`
 * reuses the part received last time for that key, and the big lists
 * (`plan.steps`, `outcomes.actions`, `memory.facts`) arrive as deltas, so a
 * 10k-action list is neither copied nor frozen again when one action is added. Every part is deeply
 * frozen here, so a policy that tries to change it throws as it would in the
 * main thread.
 *
 * @module
 */
import { parentPort } from "node:worker_threads";
import { NoemaError } from "../errors.ts";
import { deepFreeze } from "../plugins/freeze.ts";
import { guardExits } from "../plugins/exit_guard.ts";
import { listView } from "./core/list_view.ts";
import { SharedList } from "./core/shared_list.ts";
import { type LoadedPolicy, loadPolicyInThread } from "../plugins/loader.ts";
import type { PolicyState, ReviewState } from "../plugins/api.ts";
import { PLUGIN_LIMITS, toPlainJson } from "../plugins/plain_json.ts";
import { redirectOutput } from "../plugins/plugin_output.ts";
import { describeThrown } from "../plugins/thrown.ts";
import { maskPatterns } from "./mask_patterns.ts";

/**
 * Bun's `Bun.spawn`/`Bun.spawnSync` called in a worker without `env` give the
 * child the process's native environment (noema's own secrets included), not
 * the worker's cleaned `process.env`. Default their `env` to the worker's.
 */
function confineBunSpawn(): void {
  const B = (globalThis as { Bun?: Record<string, unknown> }).Bun;
  if (!B) return;
  for (const name of ["spawn", "spawnSync"] as const) {
    const orig = B[name] as ((...a: unknown[]) => unknown) | undefined;
    if (typeof orig !== "function") continue;
    const wrapped = function (this: unknown, a: unknown, b?: Record<string, unknown>) {
      if (Array.isArray(a)) return orig.call(this, a, { ...(b ?? {}), env: b?.env ?? { ...process.env } });
      const o = { ...(a as Record<string, unknown>) };
      o.env ??= { ...process.env };
      return orig.call(this, o, b);
    };
    Object.defineProperty(B, name, { value: wrapped, writable: false, configurable: false });
  }
}
confineBunSpawn();

/**
 * One part of the state as sent: the same as the last one for this key; a
 * new value; or a new value whose big list (`plan.steps`, `outcomes.actions`,
 * `memory.facts`) is sent as a delta against the list sent last time: its new
 * length and the entries that changed or were appended (an append-only list
 * sends only the new entries).
 */
export type StatePart =
  | { same: true }
  | { same: false; value: unknown }
  | { same: false; value: Record<string, unknown>; list: ListDelta };

/** Changes to one list: its field, new length, and `[index, entry]` for entries new or changed. */
export interface ListDelta {
  field: string;
  length: number;
  set: [number, unknown][];
}

/** A message to the worker. */
export type ToWorker =
  | { type: "load"; handle: number; path: string }
  | { type: "advise"; call: number; handle: number; parts: Record<string, StatePart>; method?: "advise" | "review" }
  | { type: "mask"; call: number; value: unknown; patterns: string[] }
  | { type: "release"; handle: number };

/** A message from the worker. */
export type FromWorker =
  | { type: "ready" }
  | { type: "loaded"; handle: number; id: string; name: string; version: string; review?: boolean }
  | { type: "load_error"; handle: number; message: string; code: string; exitCode: number }
  | { type: "result"; call: number; value: unknown }
  | { type: "error"; call: number; name: string; message: string; at?: string }
  | { type: "output"; label: string; text: string };

const port = parentPort;
if (port) {
  // A policy's process.exit, abort or kill of the process throws (its call fails: a deny), here as in the main thread.
  guardExits();
  const policies = new Map<number, Promise<LoadedPolicy>>();
  const slots = new Map<string, unknown>();
  const lists = new Map<string, { items: SharedList<unknown>; frozen: readonly unknown[] }>();
  /** Applies a list delta to the list kept for `key` and returns the part with the list in place, frozen. */
  const withList = (key: string, value: Record<string, unknown>, delta: ListDelta): unknown => {
    let list = lists.get(key);
    if (!list) lists.set(key, list = { items: new SharedList(), frozen: Object.freeze([]) });
    if (delta.set.length > 0 || list.items.length !== delta.length) {
      // A shared list: an entry changed in place is copied with its chunk, never shown through an earlier view.
      list.items.truncate(delta.length);
      for (const [i, entry] of delta.set) list.items.set(i, deepFreeze(entry));
      list.frozen = listView(list.items.snapshot());
    }
    return Object.freeze({ ...deepFreeze(value), [delta.field]: list.frozen });
  };
  // Messages cross as JSON text: posting a string costs a fraction of a structured clone (see policy_host.ts).
  const send = (m: FromWorker) => port.postMessage(JSON.stringify(m));
  // What the policy prints goes to the host (which writes it to stderr, prefixed), never to stdout.
  let label = "policy";
  redirectOutput((text) => send({ type: "output", label, text }));

  const onMessage = async (m: ToWorker) => {
    if (m.type === "load") {
      label = `policy ${m.path.split(/[\\/]/).pop()}`;
      const loading = loadPolicyInThread(m.path);
      policies.set(m.handle, loading);
      loading.catch(() => undefined); // reported below; advise calls report it again
      try {
        const p = await loading;
        send({ type: "loaded", handle: m.handle, id: p.id, name: p.name, version: p.version, review: !!p.review });
      } catch (e) {
        const err = e as NoemaError;
        send({
          type: "load_error",
          handle: m.handle,
          message: err instanceof NoemaError ? err.detail : String((e as Error)?.message ?? e),
          code: err instanceof NoemaError ? err.code : "bad_plugin",
          exitCode: err instanceof NoemaError ? err.exitCode : 2,
        });
      }
    } else if (m.type === "mask") {
      let masked: unknown;
      try {
        masked = maskPatterns(m.value, m.patterns);
      } catch (e) {
        const d = describeThrown(e, null);
        send({ type: "error", call: m.call, name: d.type, message: d.message });
        return;
      }
      send({ type: "result", call: m.call, value: masked });
    } else if (m.type === "release") {
      policies.delete(m.handle);
    } else if (m.type === "advise") {
      let value: unknown;
      let policy: LoadedPolicy | undefined;
      try {
        policy = await policies.get(m.handle);
        if (!policy) throw new Error(`policy handle ${m.handle} is not loaded`);
        label = `policy ${policy.id}`;
        const state: Record<string, unknown> = {};
        for (const [key, part] of Object.entries(m.parts)) {
          if (!part.same) {
            slots.set(key, "list" in part ? withList(key, part.value, part.list) : deepFreeze(part.value));
          }
          state[key] = slots.get(key);
        }
        const frozen = Object.freeze(state);
        value = m.method === "review"
          ? await policy.review?.(frozen as unknown as ReviewState)
          : await policy.advise(frozen as unknown as PolicyState);
      } catch (e) {
        const d = describeThrown(e, policy?.path ?? null);
        send({ type: "error", call: m.call, name: d.type, message: d.message, ...(d.at ? { at: d.at } : {}) });
        return;
      }
      // Only a plain copy crosses: no function, getter, proxy or cycle reaches postMessage. A lone surrogate is kept
      // (JSON text carries it as an escape): the main thread's copy finds it and refuses the verdict.
      const copy = toPlainJson(value, { maxBytes: PLUGIN_LIMITS.verdictBytes, loneSurrogates: "keep" });
      send({ type: "result", call: m.call, value: copy });
    }
  };
  port.on("message", (text: string) => void onMessage(JSON.parse(text) as ToWorker));
  send({ type: "ready" });
}
