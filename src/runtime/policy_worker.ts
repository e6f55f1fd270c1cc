/**
 * The worker side of policy isolation (see `policy_host.ts`): loads policy
 * files and answers `advise` calls, off the main thread, so that a policy
 * that loops forever can be stopped by terminating this worker.
 *
 * Messages in: `load {handle, path}`, `advise {call, handle, parts}`,
 * `release {handle}`. Messages out: `ready`, `loaded {handle, id, name,
 * version}`, `load_error {handle, message, exitCode}`, `result {call, value}` (a plain JSON copy),
 * `error {call, name, message, at?}`, `output {label, text}` (what the policy printed: its `console` and
 * `process.stdout`/`stderr` are replaced here, so nothing it prints reaches the process's stdout).
 *
 * The state arrives in parts (one per top-level key); a part marked `same`
 * reuses the part received last time for that key, so a 10k-fact list that
 * did not change is neither copied nor frozen again. Every part is deeply
 * frozen here, so a policy that tries to change it throws as it would in the
 * main thread.
 *
 * @module
 */
import { parentPort } from "node:worker_threads";
import { NoemaError } from "../errors.ts";
import { deepFreeze } from "../plugins/freeze.ts";
import { type LoadedPolicy, loadPolicyInThread } from "../plugins/loader.ts";
import type { PolicyState } from "../plugins/api.ts";
import { PLUGIN_LIMITS, toPlainJson } from "../plugins/plain_json.ts";
import { redirectOutput } from "../plugins/plugin_output.ts";
import { describeThrown } from "../plugins/thrown.ts";

/** One part of the state as sent: a new value, or the same as the last one for this key. */
export type StatePart = { same: true } | { same: false; value: unknown };

/** A message to the worker. */
export type ToWorker =
  | { type: "load"; handle: number; path: string }
  | { type: "advise"; call: number; handle: number; parts: Record<string, StatePart> }
  | { type: "release"; handle: number };

/** A message from the worker. */
export type FromWorker =
  | { type: "ready" }
  | { type: "loaded"; handle: number; id: string; name: string; version: string }
  | { type: "load_error"; handle: number; message: string; code: string; exitCode: number }
  | { type: "result"; call: number; value: unknown }
  | { type: "error"; call: number; name: string; message: string; at?: string }
  | { type: "output"; label: string; text: string };

const port = parentPort;
if (port) {
  const policies = new Map<number, Promise<LoadedPolicy>>();
  const slots = new Map<string, unknown>();
  const send = (m: FromWorker) => port.postMessage(m);
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
        send({ type: "loaded", handle: m.handle, id: p.id, name: p.name, version: p.version });
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
          if (!part.same) slots.set(key, deepFreeze(part.value));
          state[key] = slots.get(key);
        }
        value = await policy.advise(Object.freeze(state) as unknown as PolicyState);
      } catch (e) {
        const d = describeThrown(e, policy?.path ?? null);
        send({ type: "error", call: m.call, name: d.type, message: d.message, ...(d.at ? { at: d.at } : {}) });
        return;
      }
      // Only a plain copy crosses: no function, getter, proxy or cycle reaches postMessage.
      send({ type: "result", call: m.call, value: toPlainJson(value, { maxBytes: PLUGIN_LIMITS.verdictBytes }) });
    }
  };
  port.on("message", (m: ToWorker) => void onMessage(m));
  send({ type: "ready" });
}
