/**
 * Event validation speed: noema's valibot check (`checkEvent`, the schema and
 * the phase payload rules) against ajv running the generated JSON Schema
 * (`schemas/event.schema.json`, compiled once), over the same parsed events.
 * Goal: valibot at least half ajv's speed (ratio of times ≤ 2×).
 *
 *     bun bench/validation.ts [--events 200000]
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { checkEvent } from "../mod.ts";
import { type BenchReport, fixed, flag, REPO_ROOT, runStandalone, tempDir } from "./lib.ts";
import { generateEvents } from "./stream.ts";

const addFormats = addFormatsModule.default;

function best(runs: number, fn: () => number): { ms: number; result: number } {
  let ms = Infinity, result = 0;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    result = fn();
    ms = Math.min(ms, performance.now() - t);
  }
  return { ms, result };
}

/** Runs the benchmark and returns its table. */
export function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const count = Number(flag(args, "events") ?? 200_000);
  const tmp = tempDir("noema-bench-validation-");
  try {
    const path = join(tmp.path, "events.jsonl");
    generateEvents(path, count);
    const events = readFileSync(path, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
    const ajv = new Ajv2020({ strict: false, allErrors: false });
    addFormats(ajv);
    const validateAjv = ajv.compile(JSON.parse(readFileSync(join(REPO_ROOT, "schemas", "event.schema.json"), "utf8")));
    // Warm both up, then take the best of three passes.
    for (const e of events.slice(0, 5000)) {
      checkEvent(e);
      validateAjv(e);
    }
    const valibot = best(3, () => events.reduce((bad, e) => bad + (checkEvent(e).length > 0 ? 1 : 0), 0));
    const ajvRun = best(3, () => events.reduce((bad, e) => bad + (validateAjv(e) ? 0 : 1), 0));
    if (valibot.result !== 0 || ajvRun.result !== 0) {
      throw new Error(`generated events should be valid (valibot ${valibot.result}, ajv ${ajvRun.result} invalid)`);
    }
    const ratio = valibot.ms / ajvRun.ms;
    const ok = ratio <= 2;
    const perEvent = (ms: number) => fixed((ms * 1000) / count, 2);
    return Promise.resolve({
      name: "validation",
      ok,
      tables: [{
        title: `event validation: ${count} events, valibot vs ajv`,
        columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
        rows: [
          [
            "valibot checkEvent (µs/event)",
            perEvent(valibot.ms),
            `ajv ${perEvent(ajvRun.ms)}`,
            `${fixed(ratio)}×`,
            "≤ 2× (≥ 0.5× ajv's speed)",
            ok ? "yes" : "NO",
          ],
        ],
        notes: ["ajv compiles the generated JSON Schema to JavaScript; valibot interprets the schema per call."],
      }],
    });
  } finally {
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
