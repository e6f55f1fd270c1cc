/**
 * The `scripted` adapter: deterministic replay of recorded results, for
 * tests, examples and benchmarks.
 *
 * Config: `script` (path to a JSONC file, relative to the task file) or
 * `results` inline. A script is a list of results, or an object
 * `{ "results": [...], "default": {...} }`. Each result is
 * `{ "step"?: "<step id>", "status": "ok" | "error" | "skipped", "outcome"?, "output"?, "error"?: {type, message},
 * "facts"?, "delay_ms"? }`. A result with `step` answers that step; the others
 * answer steps in order; `default` answers any step left over. A step with
 * no result is an error naming it.
 *
 * @module
 */
import type { ActResult, AdapterPlugin } from "../plugins/api.ts";
import { parseJsoncFile } from "../runtime/jsonc.ts";
import { isAbsolute, join } from "node:path";

interface Scripted extends ActResult {
  step?: string;
  delay_ms?: number;
}

function asResult(x: unknown, where: string): Scripted {
  if (typeof x !== "object" || x === null || Array.isArray(x)) throw new Error(`${where}: a result must be an object`);
  const r = x as Scripted;
  if (r.status !== "ok" && r.status !== "error" && r.status !== "skipped") {
    throw new Error(`${where}.status: must be "ok", "error" or "skipped"`);
  }
  return r;
}

const scripted: AdapterPlugin = {
  name: "scripted",
  version: "1.0",
  api: "1.0",
  kind: "adapter",
  create(context) {
    const config = context.config;
    let source: unknown = config.results;
    let label = "adapter.results";
    if (typeof config.script === "string") {
      const base = typeof config.base_dir === "string" ? config.base_dir : ".";
      label = isAbsolute(config.script) ? config.script : join(base, config.script);
      source = parseJsoncFile(label);
    }
    if (source === undefined) throw new Error('the scripted adapter needs "script" (a JSONC file) or "results"');
    const list = Array.isArray(source) ? source : (source as { results?: unknown }).results;
    if (!Array.isArray(list)) throw new Error(`${label}: expected a list of results or {"results": [...]}`);
    const results = list.map((r, i) => asResult(r, `${label}: [${i}]`));
    const rawDefault = Array.isArray(source) ? undefined : (source as { default?: unknown }).default;
    const fallback = rawDefault === undefined ? undefined : asResult(rawDefault, `${label}: default`);
    const byStep = new Map<string, Scripted[]>();
    const inOrder: Scripted[] = [];
    for (const r of results) {
      if (r.step !== undefined) {
        const q = byStep.get(r.step) ?? [];
        q.push(r);
        byStep.set(r.step, q);
      } else inOrder.push(r);
    }
    let next = 0;
    return {
      // A result without `delay_ms` is returned as is, not promised: the guard then has no timer to set.
      act(request): ActResult | Promise<ActResult> {
        const r = byStep.get(request.step.id)?.shift() ?? (next < inOrder.length ? inOrder[next++] : fallback);
        if (!r) {
          return {
            status: "error",
            outcome: "no scripted result",
            error: { type: "ScriptExhausted", message: `${label} has no result for step ${request.step.id}` },
          };
        }
        const { step: _step, delay_ms: delay, ...result } = r;
        if (!delay) return result;
        return new Promise((res) => setTimeout(() => res(result), delay));
      },
    };
  },
};

export default scripted;
