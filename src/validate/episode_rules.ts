/**
 * The contract's cross-file rules of an episode, checked by `noema validate`
 * once every artifact was read: the lifecycle (which files and links a
 * terminal or non-terminal run has), traceability (the start event, the last
 * state projection, summary against state) and the manifest's hashes.
 *
 * @module
 */
import { existsSync, lstatSync, statSync } from "node:fs";
import { join } from "node:path";
import { nodeUtil } from "../builtins.ts";
import { sha256File } from "../store/hash.ts";
import { ARTIFACTS } from "../store/layout.ts";
import { type Collector, display } from "./collector.ts";
import { type CompactOutcomes, type CompactProjection, type CompactState, sameActions } from "./compact.ts";

type Json = Record<string, unknown>;

/** What the cross-file rules look at: the episode directory, its parsed artifacts and the event scan. */
export interface EpisodeFacts {
  dir: string;
  /** Names of the files in the directory. */
  present: ReadonlySet<string>;
  terminal: boolean;
  /** state.json as the rules keep it (`compact.ts`). */
  state: CompactState | null;
  summary: Json | null;
  manifest: Json | null;
  /** The first start event, the last state projection and the number of direction events, when events.jsonl was read. */
  scan: {
    start: { timestamp: unknown; line: number } | null;
    lastProjection: { payload: CompactProjection; line: number } | null;
    directions?: number;
  } | null;
}

/**
 * Required files, and summary.json with manifest.json together (terminal only).
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * import { checkLifecycleFiles } from "./episode_rules.ts";
 * const c = new Collector(10);
 * checkLifecycleFiles(c, { dir: "/ep", present: new Set(["summary.json"]), terminal: true, state: null, summary: null, manifest: null, scan: null });
 * console.log(c.count); // 4: events, learn, state missing; manifest without summary… (see rules)
 * ```
 */
export function checkLifecycleFiles(c: Collector, f: EpisodeFacts): void {
  const p = (name: string) => display(join(f.dir, name));
  for (const name of [ARTIFACTS.events, ARTIFACTS.learn, ARTIFACTS.state]) {
    if (!f.present.has(name)) c.add(p(name), "file.missing", `${name} is missing (required in every episode)`);
  }
  if (!f.terminal) return;
  if (!f.present.has(ARTIFACTS.summary)) {
    c.add(
      p(ARTIFACTS.summary),
      "lifecycle.files",
      "manifest.json exists but summary.json does not; a terminal run has both",
    );
  }
  if (!f.present.has(ARTIFACTS.manifest)) {
    c.add(
      p(ARTIFACTS.manifest),
      "lifecycle.files",
      "summary.json exists but manifest.json does not; a terminal run has both (written last)",
    );
  }
}

/**
 * state.json's links and status against the lifecycle.
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * import { compactState } from "./compact.ts";
 * import { checkStateLifecycle } from "./episode_rules.ts";
 * const c = new Collector(10);
 * checkStateLifecycle(c, { dir: "/nonexistent", present: new Set(), terminal: false, state: compactState({ links: {}, outcomes: { status: "pending" } }), summary: null, manifest: null, scan: null });
 * console.log(c.problems.map((p) => p.rule)); // [ "lifecycle.links", "lifecycle.links" ]
 * ```
 */
export function checkStateLifecycle(c: Collector, f: EpisodeFacts): void {
  const state = f.state?.value;
  if (!state) return;
  const stateFile = display(join(f.dir, ARTIFACTS.state));
  const links = (state.links ?? {}) as Json;
  const kind = f.terminal ? "terminal" : "non-terminal";
  for (const key of f.terminal ? ["events", "learn", "summary", "manifest"] : ["events", "learn"]) {
    if (typeof links[key] !== "string") {
      c.add(stateFile, "lifecycle.links", `links.${key}: required for a ${kind} run`);
    } else if (!existsSync(join(f.dir, links[key] as string))) {
      c.add(stateFile, "lifecycle.links", `links.${key}: ${links[key]} does not exist in the episode directory`);
    }
  }
  if (!f.terminal) {
    for (const key of ["summary", "manifest"]) {
      if (key in links) c.add(stateFile, "lifecycle.links", `links.${key}: a non-terminal run must not link ${key}`);
    }
  }
  const status = (state.outcomes as Json | undefined)?.status;
  if (f.terminal && status === "pending") {
    c.add(stateFile, "lifecycle.status", "outcomes.status: a terminal run cannot be pending");
  } else if (!f.terminal && typeof status === "string" && status !== "pending") {
    c.add(
      stateFile,
      "lifecycle.status",
      `outcomes.status: ${
        JSON.stringify(status)
      }, but a non-terminal run (no summary.json, no manifest.json) is pending`,
    );
  }
}

/**
 * The start event's timestamp against `episode.started_at`, and the last
 * state projection against state.json.
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * import { compactState } from "./compact.ts";
 * import { checkEventTrace } from "./episode_rules.ts";
 * const c = new Collector(10);
 * checkEventTrace(c, { dir: "/ep", present: new Set(), terminal: false, state: compactState({ episode: { started_at: "t" } }), summary: null, manifest: null, scan: { start: null, lastProjection: null } });
 * console.log(c.problems.map((p) => p.rule)); // [ "trace.start", "trace.projection" ]
 * ```
 */
export function checkEventTrace(c: Collector, f: EpisodeFacts): void {
  if (!f.state || !f.scan) return;
  const eventsFile = display(join(f.dir, ARTIFACTS.events));
  const episode = (f.state.value.episode ?? null) as Json | null;
  const { start, lastProjection } = f.scan;
  if (!start) {
    c.add(eventsFile, "trace.start", "no start event; its timestamp must equal state.json episode.started_at");
  } else if (episode && start.timestamp !== episode.started_at) {
    c.add(
      eventsFile,
      "trace.start",
      `start event timestamp ${String(start.timestamp)} differs from state.json episode.started_at ${
        String(episode.started_at)
      }`,
      start.line,
    );
  }
  if (!lastProjection) {
    c.add(
      eventsFile,
      "trace.projection",
      "no runtime event with event_type run.state_projection, though state.json was persisted",
    );
    return;
  }
  for (const problem of projectionProblems(lastProjection.payload, f.state, f.terminal)) {
    c.add(eventsFile, "trace.projection", problem, lastProjection.line);
  }
}

/**
 * How a projection payload differs from the state it projects, both reduced
 * by `compact.ts` (actions compared by digest). A terminal run's last
 * projection equals state.json's `outcomes` and `links`. A non-terminal one
 * may carry `outcomes.actions` from `actions_from` on (the actions since the
 * previous projection), `actions_total` being the whole list's length.
 *
 * @example
 * ```ts
 * import { compactProjection, compactState } from "./compact.ts";
 * import { projectionProblems } from "./episode_rules.ts";
 * const state = compactState({ outcomes: { status: "pending", actions: [{ id: "a" }, { id: "b" }] }, links: {} });
 * const delta = compactProjection({ outcomes: { status: "pending", actions: [{ id: "b" }] }, links: {}, actions_from: 1, actions_total: 2 });
 * console.log(projectionProblems(delta, state, false), projectionProblems(delta, state, true).length); // [] 1
 * ```
 */
export function projectionProblems(payload: CompactProjection, state: CompactState, terminal: boolean): string[] {
  const eq = nodeUtil().isDeepStrictEqual;
  const problems: string[] = [];
  const differs = (key: string) => `payload.${key}: the last run.state_projection differs from state.json ${key}`;
  if (!eq(payload.links, state.value.links)) problems.push(differs("links"));
  const from = payload.actions_from;
  const projected = payload.outcomes;
  const outcomes = state.outcomes;
  const truthy = (o: CompactOutcomes) => !("raw" in o) || Boolean(o.raw);
  if (terminal || typeof from !== "number" || from === 0 || !truthy(projected) || !truthy(outcomes)) {
    if (terminal && typeof from === "number" && from !== 0) {
      problems.push(
        `payload.actions_from: a terminal run's last projection must carry every action (from 0), got ${from}`,
      );
    } else if (!sameOutcomes(projected, outcomes, eq)) problems.push(differs("outcomes"));
    return problems;
  }
  const all = "rest" in outcomes && outcomes.actions.kind === "array" ? outcomes.actions.digests : new Float64Array(0);
  if (!("rest" in projected && "rest" in outcomes && eq(projected.rest, outcomes.rest))) {
    problems.push(differs("outcomes"));
  }
  const tail = "rest" in projected ? projected.actions : { kind: "absent" as const };
  if (payload.actions_total !== all.length) {
    problems.push(
      `payload.actions_total: ${String(payload.actions_total)}, but state.json has ${all.length} actions`,
    );
  } else if (
    !Number.isInteger(from) || from < 0 || from > all.length ||
    !sameActions(tail, { kind: "array", digests: all.subarray(from) }, eq)
  ) {
    problems.push(`payload.outcomes.actions: differs from state.json outcomes.actions from index ${from} on`);
  }
  return problems;
}

function sameOutcomes(a: CompactOutcomes, b: CompactOutcomes, eq: (x: unknown, y: unknown) => boolean): boolean {
  if ("raw" in a || "raw" in b) return "raw" in a && "raw" in b && eq(a.raw, b.raw);
  return eq(a.rest, b.rest) && sameActions(a.actions, b.actions, eq);
}

/**
 * summary.json against state.json: episode id, started_at and task.
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * import { compactState } from "./compact.ts";
 * import { checkSummaryTrace } from "./episode_rules.ts";
 * const c = new Collector(10);
 * checkSummaryTrace(c, { dir: "/ep", present: new Set(), terminal: true, state: compactState({ episode: { id: "ep_1", started_at: "t" } }), summary: { episode_id: "ep_2", started_at: "t" }, manifest: null, scan: null });
 * console.log(c.problems[0].message); // "episode_id: ep_2 differs from state.json episode.id ep_1"
 * ```
 */
export function checkSummaryTrace(c: Collector, f: EpisodeFacts): void {
  const { summary } = f;
  const state = f.state?.value;
  const episode = (state?.episode ?? null) as Json | null;
  if (!state || !summary || !episode) return;
  const summaryFile = display(join(f.dir, ARTIFACTS.summary));
  const episodeId = typeof episode.id === "string" ? episode.id : null;
  if (episodeId !== null && summary.episode_id !== episodeId) {
    c.add(
      summaryFile,
      "trace.summary",
      `episode_id: ${String(summary.episode_id)} differs from state.json episode.id ${episodeId}`,
    );
  }
  if (summary.started_at !== episode.started_at) {
    c.add(
      summaryFile,
      "trace.summary",
      `started_at: ${String(summary.started_at)} differs from state.json episode.started_at ${
        String(episode.started_at)
      }`,
    );
  }
  const task = (state.goal as Json | undefined)?.task;
  if (task !== undefined && summary.task !== task) {
    c.add(summaryFile, "trace.summary", "task: differs from state.json goal.task");
  }
}

/**
 * `trace.branching_factor`: summary.json `insight.metrics.branching_factor`
 * is the number of direction events (events of phase `direction`).
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * import { checkBranchingFactor } from "./episode_rules.ts";
 * const c = new Collector(10);
 * checkBranchingFactor(c, { dir: "/ep", present: new Set(), terminal: true, state: null, summary: { insight: { metrics: { branching_factor: 3 } } }, manifest: null, scan: { start: null, lastProjection: null, directions: 2 } });
 * console.log(c.problems[0].rule); // "trace.branching_factor"
 * ```
 */
export function checkBranchingFactor(c: Collector, f: EpisodeFacts): void {
  const insight = f.summary?.insight as Json | undefined;
  const factor = (insight?.metrics as Json | undefined)?.branching_factor;
  const directions = f.scan?.directions;
  if (typeof factor !== "number" || directions === undefined || factor === directions) return;
  c.add(
    display(join(f.dir, ARTIFACTS.summary)),
    "trace.branching_factor",
    `insight.metrics.branching_factor: ${factor}, but events.jsonl has ${directions} direction events`,
  );
}

/**
 * Each file manifest.json lists exists with its size and sha256, and every terminal artifact is listed.
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * import { checkManifest } from "./episode_rules.ts";
 * const c = new Collector(10);
 * checkManifest(c, { dir: "/nonexistent", present: new Set(), terminal: true, state: null, summary: null, manifest: { files: [{ name: "gone.json" }] }, scan: null });
 * console.log(c.problems[0].rule); // "manifest.missing"
 * ```
 */
export function checkManifest(c: Collector, f: EpisodeFacts): void {
  const manifest = f.manifest;
  if (!manifest || !Array.isArray(manifest.files)) return;
  const manifestFile = display(join(f.dir, ARTIFACTS.manifest));
  const listed = new Set<string>();
  for (const [i, entry] of (manifest.files as Json[]).entries()) {
    if (typeof entry?.name !== "string") continue;
    listed.add(entry.name);
    const target = join(f.dir, entry.name);
    if (entry.name.split(/[\\/]/).includes("..") || !existsSync(target) || !statSync(target).isFile()) {
      c.add(manifestFile, "manifest.missing", `files[${i}]: ${entry.name} does not exist`);
      continue;
    }
    if (lstatSync(target).isSymbolicLink()) {
      // Not hashed through: the manifest covers the episode's own files, never one a link points at.
      c.add(manifestFile, "manifest.missing", `files[${i}]: ${entry.name} is a symbolic link, not the episode's file`);
      continue;
    }
    const actual = sha256File(target);
    if (typeof entry.size_bytes === "number" && actual.size_bytes !== entry.size_bytes) {
      c.add(
        manifestFile,
        "manifest.size",
        `files[${i}]: ${entry.name} is ${actual.size_bytes} bytes, manifest says ${entry.size_bytes}`,
      );
    }
    if (typeof entry.sha256 === "string" && actual.sha256 !== entry.sha256) {
      c.add(
        manifestFile,
        "manifest.hash",
        `files[${i}]: ${entry.name} has ${actual.sha256}, manifest says ${entry.sha256}`,
      );
    }
  }
  for (const name of [ARTIFACTS.events, ARTIFACTS.learn, ARTIFACTS.state, ARTIFACTS.summary]) {
    if (f.present.has(name) && !listed.has(name)) {
      c.add(manifestFile, "manifest.unlisted", `files: ${name} is not listed`);
    }
  }
}
