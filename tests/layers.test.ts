/**
 * Layers point down. `src/schema/` and `src/store/` know nothing above them;
 * `src/runtime/` knows no driver, adapter or front end (`agents/`, `llm/`,
 * `adapters/`, `cli/`, `report/`, the composition root `src/drivers.ts`), not
 * even through a dynamic `import()` or through another folder; and no two
 * folders import each other in a circle.
 *
 * @module
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cycles, type ImportEdge, importEdges, unitOf } from "./helpers/import_graph.ts";
import { REPO } from "./helpers/cli.ts";

/** Leaf files directly in `src/` that any layer may import (they import no other file of noema). */
const LEAVES = [
  "src/builtins.ts",
  "src/called_as.ts",
  "src/control_chars.ts",
  "src/did_you_mean.ts",
  "src/errors.ts",
  "src/json.ts",
  "src/kicks.ts",
  "src/priority.ts",
  "src/text_head.ts",
  "src/version.ts",
];

/** What each lower layer may import: folders of `src/` and leaf files (packages and `node:` modules are free). */
const MAY_IMPORT: Record<string, readonly string[]> = {
  "src/schema": ["src/json.ts", "src/version.ts"],
  "src/store": ["src/schema", ...LEAVES],
  "src/runtime": ["src/plugins", "src/verify", "src/read", "src/store", "src/schema", ...LEAVES],
};

/** What sits on the runtime: it must not reach any of these, directly or through another file. */
const ABOVE_RUNTIME = [
  "src/agents",
  "src/llm",
  "src/adapters",
  "src/cli",
  "src/report",
  "src/validate",
  "src/drivers.ts",
  "src/public_api.ts",
  "mod.ts",
];

/**
 * Imports that still point up, each closing a circle between folders. The
 * cycle test leaves them out, so a new one fails it; remove an entry when its
 * import is gone (a listed import that no longer exists fails the test too).
 */
const KNOWN_BACK_EDGES: readonly { from: string; to: string; why: string }[] = [
  {
    from: "src/plugins/loader.ts",
    to: "src/public_api.ts",
    why:
      "serves the public API as the bare `noema` module to plugin files under Bun, lazily (also in the policy worker)",
  },
  { from: "src/plugins/loader.ts", to: "src/runtime/policy_host.ts", why: "loadPolicyFile starts the policy worker" },
  { from: "src/plugins/loader.ts", to: "src/runtime/planner.ts", why: "the Planner type" },
  { from: "src/plugins/process.ts", to: "src/runtime/redact.ts", why: "child output is masked as it is captured" },
  { from: "src/report/html.ts", to: "src/cli/format.ts", why: "formatMs" },
  { from: "src/report/model.ts", to: "src/cli/format.ts", why: "eventSummary, msBetween" },
  { from: "src/report/steps_html.ts", to: "src/cli/format.ts", why: "formatMs" },
  { from: "src/report/metric_format.ts", to: "src/cli/format.ts", why: "formatMs (and passes it on to src/serve)" },
  // src/serve sits beside src/cli (noema serve is a command): it answers the CLI's --json shapes with the CLI's code.
  { from: "src/serve/api.ts", to: "src/cli/episode_view.ts", why: "the API's episode is `noema view --json`" },
  { from: "src/serve/runs.ts", to: "src/cli/time_args.ts", why: "the since filter reads as `noema list --since`" },
  { from: "src/serve/approvals.ts", to: "src/cli/store_approvals.ts", why: "localPending, as `noema approve`" },
  { from: "src/serve/events.ts", to: "src/cli/format.ts", why: "eventSummary, as `noema events`" },
  {
    from: "src/serve/store_source.ts",
    to: "src/cli/commands/list_store.ts",
    why: "entryOfRow, as `noema list --store`",
  },
  {
    from: "src/serve/store_source.ts",
    to: "src/cli/store_approvals.ts",
    why: "decideInStore, as `noema approve --store`",
  },
];

const isKnown = (e: ImportEdge) => KNOWN_BACK_EDGES.some((k) => k.from === e.from && k.to === e.to);

const inUnit = (file: string, unit: string) => unitOf(file) === unit;

const edges = importEdges();

test("schema/, store/ and runtime/ import nothing above their layer, statically or dynamically", () => {
  const offenders: string[] = [];
  for (const e of edges) {
    const layer = unitOf(e.from);
    const allowed = MAY_IMPORT[layer];
    if (!allowed || e.to === null) continue;
    const target = unitOf(e.to);
    if (target !== layer && !allowed.includes(target)) {
      offenders.push(`${e.from} imports ${e.spec} (${e.kind}): ${target} is not below ${layer}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test("the leaf files import no other file of noema", () => {
  const offenders = edges.filter((e) => LEAVES.includes(e.from) && e.to !== null && !LEAVES.includes(e.to));
  assert.deepEqual(offenders.map((e) => `${e.from} imports ${e.spec}`), []);
});

test("nothing the runtime imports, at any depth and even lazily, reaches a driver, adapter or front end", () => {
  const next = new Map<string, ImportEdge[]>();
  for (const e of edges) {
    // The plugin API module is what plugin files import, not a dependency of the runtime.
    if (e.to === null || isKnown(e) && e.to === "src/public_api.ts") continue;
    next.set(e.from, [...next.get(e.from) ?? [], e]);
  }
  // Breadth first from every runtime file, keeping how each file was reached.
  const via = new Map<string, ImportEdge | null>();
  const queue = edges.map((e) => e.from).filter((f) => inUnit(f, "src/runtime"));
  for (const f of queue) via.set(f, null);
  const reached: string[] = [];
  for (let i = 0; i < queue.length; i++) {
    for (const e of next.get(queue[i]) ?? []) {
      if (via.has(e.to!)) continue;
      via.set(e.to!, e);
      queue.push(e.to!);
      // Each way in is reported once, where it crosses into a unit above the runtime.
      if (ABOVE_RUNTIME.includes(unitOf(e.to!)) && !ABOVE_RUNTIME.includes(unitOf(e.from))) reached.push(e.to!);
    }
  }
  const chain = (file: string): string => {
    const e = via.get(file);
    return e ? `${chain(e.from)} -> ${file}${e.kind === "static" ? "" : ` (${e.kind})`}` : file;
  };
  assert.deepEqual(reached.map(chain), []);
});

test("no folders of src/ import each other in a circle", () => {
  const graph = new Map<string, Set<string>>();
  for (const e of edges) {
    if (e.to === null || isKnown(e)) continue;
    const [a, b] = [unitOf(e.from), unitOf(e.to)];
    if (!graph.has(a)) graph.set(a, new Set());
    if (a !== b) graph.get(a)!.add(b);
  }
  const found = cycles(graph).map((units) => {
    const inside = edges.filter((e) =>
      e.to !== null && !isKnown(e) && units.includes(unitOf(e.from)) && units.includes(unitOf(e.to)) &&
      unitOf(e.from) !== unitOf(e.to)
    );
    return `${units.join(" <-> ")}: ${inside.map((e) => `${e.from} -> ${e.to}`).join(", ")}`;
  });
  assert.deepEqual(found, []);
  const stale = KNOWN_BACK_EDGES.filter((k) => !edges.some((e) => e.from === k.from && e.to === k.to));
  assert.deepEqual(stale, [], "a listed back edge no longer exists: remove it from KNOWN_BACK_EDGES");
});

test("the dispatch from `using` to a driver lives in the composition root, src/drivers.ts", () => {
  const toDrivers = edges.filter((e) => e.to === "src/agents/claude_code/run.ts" || e.to === "src/llm/driver.ts");
  assert.deepEqual([...new Set(toDrivers.map((e) => `${e.from} (${e.kind})`))].sort(), [
    "src/drivers.ts (dynamic)",
  ]);
});

test("built-ins that take milliseconds to load are never imported statically (src/builtins.ts loads them on first use)", () => {
  // The compiled binary loads every `node:` module any file imports statically when it starts, even for a file it
  // loads lazily: `node:tls` alone made `noema summary`'s cold start 1.09x jq (goal 1x), `node:readline` ~1.5 ms.
  const costly =
    /^\s*import\s+(?!type\b)[^;]*?\bfrom\s*["']node:(tls|readline|net|http|https|http2|zlib|stream|tty|util|timers|test)["']/m;
  const found = edges
    .filter((e) => e.to === null && e.kind === "static" && /^node:/.test(e.spec))
    .map((e) => e.from)
    .filter((file, i, all) => all.indexOf(file) === i)
    .filter((file) => costly.test(readFileSync(join(REPO, file), "utf8")));
  assert.deepEqual(found, []);
});
