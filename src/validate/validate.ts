/**
 * `noema validate`: every artifact against its schema, and the cross-file
 * rules of the contract (lifecycle links, traceability, manifest hashes).
 * Events are streamed, and of `state.json` and of the last state projection
 * only what the cross-file rules read is kept (`compact.ts`; a large one is
 * parsed in pieces, `large.ts`): memory grows with the longest line (and a
 * large `state.json`'s text), not with the length of `events.jsonl`.
 *
 * @module
 */
import { existsSync, lstatSync, readdirSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import { ownEntry } from "../json.ts";
import { checkEvent, PHASE_PAYLOADS } from "../schema/event.ts";
import type { SchemaProblem } from "../schema/problems.ts";
import { type SchemaName, SCHEMAS } from "../schema/registry.ts";
import { collectGarbage, collectYoungGarbage } from "../store/gc.ts";
import { readJsonText } from "../store/json_file.ts";
import type { DuplicateKey } from "../store/json_scan.ts";
import { readJsonl } from "../store/jsonl.ts";
import { ARTIFACTS, locateEpisode, type RootOptions } from "../store/layout.ts";
import type { RuleId } from "./rules.ts";
import { jsonLocator } from "./json_locate.ts";
import { ActionMatcher, checkOrderedAction } from "./actions.ts";
import { checkSections } from "./sections.ts";
import { Collector, display, type ValidationProblem, type ValidationWarning } from "./collector.ts";
import { LearnTrace } from "./learn_rules.ts";
import { type Profile, type ProfileFinding, stateProfile, summaryProfile } from "./profile.ts";
import { checkApprovals } from "./approvals.ts";
import {
  checkBranchingFactor,
  checkEventTrace,
  checkLifecycleFiles,
  checkManifest,
  checkStateLifecycle,
  checkSummaryTrace,
  type EpisodeFacts,
} from "./episode_rules.ts";
import { checkDirectoryName, checkPlanTrace, EventTrace } from "./trace_rules.ts";
import { parseEventRange, parseState, parseStateFile, PIECEWISE_CHARS } from "./large.ts";
import { NumberSet, repeatedIds } from "../store/number_set.ts";
import {
  type CompactProjection,
  compactProjection,
  type CompactState,
  compactState,
  hash53,
  piecesOf,
} from "./compact.ts";

export type { ValidationProblem, ValidationWarning } from "./collector.ts";

/** The result of validating an episode or a file. */
export interface ValidationReport {
  /** What was validated (a directory or a file). */
  target: string;
  /** The episode id, when an episode was validated. */
  episode_id: string | null;
  /** Lifecycle of the episode: terminal when summary.json or manifest.json exists. */
  lifecycle: "terminal" | "non-terminal" | null;
  /** True when no problem was found (and, with `strict`, no warning either). */
  valid: boolean;
  /** Total number of problems (the list may be capped). */
  problem_count: number;
  /** The problems, in file order, up to `maxProblems`. */
  problems: ValidationProblem[];
  /** What was read. */
  checked: { files: string[]; events: number; learn_lines: number };
  /** The profile checked: `contract` (the contract alone, the default) or `noema` (plus noema's own expectations). */
  profile: Profile;
  /** Whether warnings make the report invalid (`--strict`). */
  strict: boolean;
  /** Total number of warnings of the `noema` profile (0 under `contract`). */
  warning_count: number;
  /** The warnings of the `noema` profile, up to `maxProblems`. */
  warnings: ValidationWarning[];
}

/** Options for validation. */
export interface ValidateOptions extends RootOptions {
  /**
   * Most problems kept in the report (all are counted).
   * @default {10000}
   */
  maxProblems?: number;
  /** Called every 100k lines with the number of lines read so far. */
  onProgress?: (file: string, lines: number) => void;
  /**
   * `noema` adds noema's own expectations where the contract leaves the shape open, as warnings (`PROFILE_RULES`).
   * @default {"contract"}
   */
  profile?: Profile;
  /** Warnings (of the `noema` profile) make the report invalid. */
  strict?: boolean;
}

/** Garbage is collected after each 512 KiB of events read, at least (Bun; 5,000 steps: every 4 MiB 83, every 1 MiB 75, every 512 KiB about 66 MiB with the rest). */
const GC_BYTES = 1 << 19;

/** Bytes read per call while scanning events: a quarter of the reader's default, 1.5 MiB less buffer. */
const SCAN_CHUNK = 256 << 10;

const REQUIRED_EVENT_FIELDS = new Set(["id", "timestamp", "episode_id", "phase", "payload", "evidence_ids"]);

function eventRule(problem: SchemaProblem, phase: unknown): RuleId {
  if (REQUIRED_EVENT_FIELDS.has(problem.path) && problem.message === "required field is missing") {
    return "event.required";
  }
  if (problem.path === "faculty") return "event.faculty";
  if (problem.path.startsWith("metrics")) return "event.metrics";
  if (problem.path.startsWith("payload") && problem.path !== "payload") {
    if (phase === "learn") return "payload.learn";
    if (typeof phase === "string" && Object.hasOwn(PHASE_PAYLOADS, phase)) return `payload.${phase}` as RuleId;
  }
  if (problem.path === "payload" && phase === "learn" && problem.message.startsWith("matches")) return "payload.learn";
  return "event.schema";
}

function readJsonArtifact(
  c: Collector,
  path: string,
  parse?: (text: string) => unknown,
): { text: string; value: Record<string, unknown> } | null {
  try {
    return readJsonText(path, display(path), { parse });
  } catch (e) {
    if (!(e instanceof NoemaError)) throw e;
    c.add(display(path), "file.json", e.detail, e.location.line);
    return null;
  }
}

/** Runs a streaming check of `path`; a file that cannot be read at all (not a regular file) is a `file.json` problem. */
function unreadableAsProblem<T>(c: Collector, path: string, check: () => T): T | null {
  try {
    return check();
  } catch (e) {
    if (!(e instanceof NoemaError)) throw e;
    c.add(display(path), "file.json", e.detail, e.location.line);
    return null;
  }
}

function checkJsonArtifact(c: Collector, path: string, name: SchemaName): Record<string, unknown> | null {
  // A large state.json is parsed in pieces (large.ts); the schema problems of its long lists are found meanwhile.
  const pieceProblems: SchemaProblem[] = [];
  const read = readArtifactValue(c, path, name, pieceProblems);
  if (!read) return null;
  const { value, duplicates } = read;
  const file = display(path);
  collectGarbage();
  for (const d of duplicates) {
    c.add(
      file,
      "json.duplicate_key",
      `${d.path ? d.path + "." : ""}${d.key}: duplicate key (the last value is used; other readers may use the first)`,
      d.line,
    );
  }
  const problems = [...SCHEMAS[name].check(value), ...pieceProblems];
  collectGarbage(); // the check's copies
  const sections = checkSections(name, value);
  const warnings: ProfileFinding[] = !c.profile
    ? []
    : name === "state"
    ? stateProfile(value)
    : name === "summary"
    ? summaryProfile(value)
    : [];
  const lines = problems.length + sections.length + warnings.length === 0
    ? new Map<string, number | undefined>()
    : linesOf(path, [
      ...problems.map((p) => p.path).filter((p) => p !== ""),
      ...[...sections, ...warnings].map((p) => p.path),
    ]);
  for (const p of problems) {
    c.add(file, `${name}.schema` as RuleId, p.path ? `${p.path}: ${p.message}` : p.message, lines.get(p.path));
  }
  for (const p of sections) c.add(file, p.rule, `${p.path}: ${p.message}`, lines.get(p.path));
  for (const w of warnings) c.warn(file, w.rule, `${w.path}: ${w.message}`, lines.get(w.path));
  return value;
}

/**
 * An artifact's value and its duplicate keys. A large `state.json` is parsed from its bytes in pieces
 * (`parseStateFile`: it has no duplicate key then); anything else, or one that reading refuses, is read as text.
 */
function readArtifactValue(
  c: Collector,
  path: string,
  name: SchemaName,
  pieceProblems: SchemaProblem[],
): { value: Record<string, unknown>; duplicates: DuplicateKey[] } | null {
  const streamed = name === "state" ? parseStateFile(path, pieceProblems) : null;
  if (streamed) return { value: streamed, duplicates: [] };
  let read = readJsonArtifact(c, path, name === "state" ? (text) => parseState(text, pieceProblems) : undefined);
  if (!read) return null;
  // Duplicate keys (JSON.parse keeps the last) in a pass over the text that keeps no tree; then the text is let go
  // before the schema check, so a large state.json is never held as text, value and the check's copies at once.
  const duplicates = jsonLocator(read.text).duplicates();
  const value = read.value;
  read = null;
  return { value, duplicates };
}

/** The lines of schema problems: the artifact's text read again (only an invalid artifact gets here). */
function linesOf(path: string, paths: string[]): Map<string, number | undefined> {
  try {
    return jsonLocator(readJsonText(path).text).linesOf(paths);
  } catch {
    return new Map(); // changed since it was read: the problems stay, without lines
  }
}

function checkLearnFile(c: Collector, path: string, opts: ValidateOptions, learn?: LearnTrace): number {
  let n = 0;
  const file = display(path);
  for (const entry of readJsonl(path)) {
    n++;
    if (entry.problem) c.add(file, `jsonl.${entry.problem}`, entry.message, entry.line);
    else {
      c.schema(file, "learn.schema", SCHEMAS.learn.check(entry.value), entry.line);
      learn?.learnLine(entry.value, entry.line);
    }
    if (n % 100_000 === 0) opts.onProgress?.(file, n);
  }
  return n;
}

interface EventScan {
  count: number;
  start: { timestamp: unknown; line: number } | null;
  lastProjection: { payload: CompactProjection; line: number } | null;
  projections: number;
  /** What the trace rules (trace_rules.ts) gather from the events. */
  trace: EventTrace;
  /** The number of direction events (`trace.branching_factor`). */
  directions: number;
  /** The learn events, and later learn.jsonl's proposals (`trace.learn_proposals`). */
  learn: LearnTrace;
}

function scanEvents(
  c: Collector,
  path: string,
  episodeId: string | null,
  actionTimestamps: ActionMatcher | null,
  orderedActions: Record<string, unknown>[] | null,
  dir: string,
  opts: ValidateOptions & { terminal: boolean },
): EventScan {
  const file = display(path);
  const ids = new NumberSet();
  const duplicateCandidates = new Set<number>();
  const scan: EventScan = {
    count: 0,
    start: null,
    lastProjection: null,
    projections: 0,
    trace: new EventTrace(),
    directions: 0,
    learn: new LearnTrace(),
  };
  let actIndex = 0;
  let sinceGc = 0, gcAfter = GC_BYTES;
  let lines = 0;
  // A line over 1 MiB is not kept as text: a state projection is parsed from its bytes, any other line read then.
  const read = { chunkSize: SCAN_CHUNK, deferOver: PIECEWISE_CHARS, parseRange: parseEventRange };
  for (const entry of readJsonl(path, read)) {
    if (++lines % 100_000 === 0) opts.onProgress?.(file, lines);
    if ((sinceGc += entry.bytes) > gcAfter) {
      // The events read so far are garbage: collected (the young objects: a full collection each time cost as much as
      // the parsing, mostly waiting for the JIT's threads), the heap does not grow with them. A collection costs about
      // what the rules keep, so it waits for more bytes when they keep more (100,000 steps: 16 → 12 s, same peak).
      collectYoungGarbage();
      sinceGc = 0;
      gcAfter = Math.max(GC_BYTES, process.memoryUsage().heapUsed / 16);
    }
    if (entry.problem) {
      c.add(file, `jsonl.${entry.problem}`, entry.message, entry.line);
      continue;
    }
    const e = entry.value;
    scan.count++;
    scan.trace.add(e, entry.line);
    // A large plan event read in pieces (large.ts) carries its step records' problems.
    for (const p of [...checkEvent(e), ...piecesOf(e.payload)?.problems ?? []]) {
      c.add(file, eventRule(p, e.phase), p.path ? `${p.path}: ${p.message}` : p.message, entry.line);
    }
    if (typeof e.id === "string") {
      const h = hash53(e.id);
      if (ids.has(h)) duplicateCandidates.add(h);
      else ids.add(h);
    }
    if (typeof e.caused_by === "string" && !ids.has(hash53(e.caused_by))) {
      c.add(file, "event.caused_by", `caused_by: no earlier event has id ${JSON.stringify(e.caused_by)}`, entry.line);
    }
    if (episodeId !== null && typeof e.episode_id === "string" && e.episode_id !== episodeId) {
      c.add(
        file,
        "event.episode_id",
        `episode_id: ${JSON.stringify(e.episode_id)} differs from the episode's id ${JSON.stringify(episodeId)}`,
        entry.line,
      );
    }
    const payload = (typeof e.payload === "object" && e.payload !== null ? e.payload : {}) as Record<string, unknown>;
    countEvent(c, file, scan, e, payload, entry.line);
    if (e.phase === "runtime" && e.event_type === "run.state_projection") {
      scan.projections++;
      scan.lastProjection = { payload: compactProjection(payload), line: entry.line };
    }
    if (e.phase === "learn" && typeof payload.learn_path === "string" && !existsSync(join(dir, payload.learn_path))) {
      c.add(
        file,
        "trace.learn",
        `payload.learn_path: ${payload.learn_path} does not exist in the episode directory`,
        entry.line,
      );
    }
    if (e.phase === "act") {
      if (actionTimestamps) actionTimestamps.match(c, file, e, payload, entry.line);
      else if (orderedActions) {
        checkOrderedAction(c, file, orderedActions, actIndex, e, payload, entry.line, opts.terminal);
      }
      actIndex++;
    }
  }
  if (duplicateCandidates.size > 0) confirmDuplicates(c, path, file, duplicateCandidates);
  return scan;
}

/** What the scan counts of one event: the start (`event.duplicate_start`), direction and learn events. */
function countEvent(
  c: Collector,
  file: string,
  scan: EventScan,
  e: Record<string, unknown>,
  payload: Record<string, unknown>,
  line: number,
): void {
  if (e.phase === "start") {
    if (scan.start === null) scan.start = { timestamp: e.timestamp, line };
    else c.add(file, "event.duplicate_start", `a second start event (the first is on line ${scan.start.line})`, line);
  } else if (e.phase === "direction") scan.directions++;
  else if (e.phase === "learn") scan.learn.event(c, file, payload, line);
}

/** Confirms id hash hits exactly with a second pass over just the candidates. */
function confirmDuplicates(c: Collector, path: string, file: string, candidates: Set<number>): void {
  for (const { entry, id, first } of repeatedIds(readJsonl(path), candidates)) {
    c.add(file, "event.duplicate_id", `id: ${JSON.stringify(id)} is already used on line ${first}`, entry.line);
  }
}

/**
 * Validates an episode directory: every artifact present against its schema,
 * and the cross-file rules. Never throws for bad artifacts: every problem is
 * in the report.
 *
 * @example
 * ```ts
 * import { validateEpisodeDir } from "noema";
 * const report = validateEpisodeDir(".noema/episodes/ep_01K9RBBMXXRSFWR49SXFGF4SPR");
 * for (const p of report.problems) console.log(`${p.file}:${p.line ?? ""}: ${p.rule}: ${p.message}`);
 * ```
 */
/**
 * An artifact that is a symbolic link is a problem and is not read (it is taken as absent): an episode's files are
 * never links, and one planted there would make validate judge another file.
 */
function refuseLinkedArtifacts(c: Collector, dir: string, present: Set<string>): void {
  for (const name of Object.values(ARTIFACTS)) {
    if (!present.has(name)) continue;
    let link = false;
    try {
      link = lstatSync(join(dir, name)).isSymbolicLink();
    } catch {
      continue; // gone meanwhile: the checks below say so
    }
    if (!link) continue;
    present.delete(name);
    c.add(display(join(dir, name)), "file.json", "is a symbolic link; refusing to read through it");
  }
}

export function validateEpisodeDir(dir: string, options: ValidateOptions = {}): ValidationReport {
  const c = new Collector(options.maxProblems ?? 10_000, options.profile === "noema");
  const p = (name: string) => join(dir, name);
  const present = new Set(readdirSync(dir));
  refuseLinkedArtifacts(c, dir, present);
  const has = (name: string) => present.has(name);
  const terminal = has(ARTIFACTS.summary) || has(ARTIFACTS.manifest);
  const files: string[] = [];
  const read = (name: string, schema: SchemaName) => {
    if (!has(name)) return null;
    files.push(name);
    return checkJsonArtifact(c, p(name), schema);
  };
  checkLifecycleFiles(c, { dir, present, terminal, state: null, summary: null, manifest: null, scan: null });

  // state.json first: its actions drive the traceability checks while streaming events. Only what the rules read
  // of it is kept (compact.ts), so its tree is let go before the events are read.
  const compact = readCompact(() => read(ARTIFACTS.state, "state"));
  collectGarbage(); // state.json's tree, just let go
  const state = compact?.value ?? null;
  const episode = (state?.episode ?? null) as Record<string, unknown> | null;
  const episodeId = typeof episode?.id === "string" ? episode.id : null;
  const scan = has(ARTIFACTS.events)
    ? unreadableAsProblem(
      c,
      p(ARTIFACTS.events),
      () => scanEpisodeEvents(c, p(ARTIFACTS.events), state, episodeId, dir, { ...options, terminal }),
    )
    : null;
  if (scan) files.push(ARTIFACTS.events);
  let learnLines = 0;
  if (has(ARTIFACTS.learn)) {
    files.push(ARTIFACTS.learn);
    learnLines = unreadableAsProblem(
      c,
      p(ARTIFACTS.learn),
      () => checkLearnFile(c, p(ARTIFACTS.learn), options, scan?.learn),
    ) ?? 0;
  }
  const summary = read(ARTIFACTS.summary, "summary");
  const manifest = read(ARTIFACTS.manifest, "manifest");
  const facts: EpisodeFacts = { dir, present, terminal, state: compact, summary, manifest, scan };
  checkStateLifecycle(c, facts);
  checkEventTrace(c, facts);
  checkSummaryTrace(c, facts);
  checkBranchingFactor(c, facts);
  scan?.learn.check(c, dir, summary);
  checkManifest(c, facts);
  checkPlanTrace(c, { dir, terminal, state, trace: scan?.trace ?? null });
  checkDirectoryName(c, { dir, terminal, state, trace: scan?.trace ?? null });
  checkApprovals(c, dir, episodeId);
  return {
    target: display(dir),
    episode_id: episodeId ?? basename(dir),
    lifecycle: terminal ? "terminal" : "non-terminal",
    ...verdict(c, options),
    checked: { files, events: scan?.count ?? 0, learn_lines: learnLines },
    ...profileOf(c, options),
  };
}

/** `valid`, `problem_count` and `problems` of a report. */
function verdict(
  c: Collector,
  options: ValidateOptions,
): Pick<ValidationReport, "valid" | "problem_count" | "problems"> {
  return {
    valid: c.count === 0 && !(options.strict && c.warningCount > 0),
    problem_count: c.count,
    problems: c.problems,
  };
}

/** The profile part of a report. */
function profileOf(
  c: Collector,
  options: ValidateOptions,
): Pick<ValidationReport, "profile" | "strict" | "warning_count" | "warnings"> {
  return {
    profile: options.profile ?? "contract",
    strict: options.strict ?? false,
    warning_count: c.warningCount,
    warnings: c.warnings,
  };
}

/** Reads state.json (with `read`) and keeps only what the rules read of it; its tree is collected. */
function readCompact(read: () => Record<string, unknown> | null): CompactState | null {
  const parsed = read();
  const compact = parsed ? compactState(parsed) : null;
  return compact;
}

/** Streams events.jsonl, matching act events to state.json's actions (by id, or in order when ids are missing). */
function scanEpisodeEvents(
  c: Collector,
  path: string,
  state: Record<string, unknown> | null,
  episodeId: string | null,
  dir: string,
  options: ValidateOptions & { terminal: boolean },
): EventScan {
  const outcomes = state?.outcomes as Record<string, unknown> | undefined;
  // Without outcomes.actions, a terminal run's act events have no action (trace.action_missing).
  const actions = Array.isArray(outcomes?.actions)
    ? outcomes.actions as Record<string, unknown>[]
    : state && (outcomes === undefined || (typeof outcomes === "object" && outcomes?.actions === undefined))
    ? []
    : null;
  const matcher = actions && actions.every((a) => typeof a?.id === "string")
    ? new ActionMatcher(actions, options.terminal)
    : null;
  const scan = scanEvents(c, path, episodeId, matcher, matcher ? null : actions, dir, options);
  for (const id of matcher?.unmatched() ?? []) {
    c.add(
      display(join(dir, ARTIFACTS.state)),
      "trace.action_timestamp",
      `outcomes.actions: action ${id} has no act event (by action_id, or by step_id and timestamp)`,
    );
  }
  return scan;
}

const FILE_SCHEMAS: Record<string, SchemaName> = {
  [ARTIFACTS.state]: "state",
  [ARTIFACTS.summary]: "summary",
  [ARTIFACTS.manifest]: "manifest",
};

/**
 * Validates one artifact file against its schema, chosen by file name
 * (`events.jsonl`, `learn.jsonl`, `state.json`, `summary.json`,
 * `manifest.json`) or by `schema`. Cross-file rules need the whole episode:
 * use {@link validateEpisodeDir}.
 *
 * @example
 * ```ts
 * import { validateFile } from "noema";
 * validateFile("exported/events.jsonl", { schema: "event" }).valid;
 * ```
 */
export function validateFile(path: string, options: ValidateOptions & { schema?: SchemaName } = {}): ValidationReport {
  const c = new Collector(options.maxProblems ?? 10_000, options.profile === "noema");
  const name = basename(path);
  const schema = options.schema ??
    (name.endsWith("events.jsonl") ? "event" : name.endsWith("learn.jsonl") ? "learn" : ownEntry(FILE_SCHEMAS, name));
  if (!schema) {
    throw new NoemaError(
      "usage",
      `cannot tell which schema ${path} follows; pass --schema event|state|summary|manifest|learn`,
      { exitCode: EXIT.USAGE },
    );
  }
  let events = 0, learnLines = 0;
  if (schema === "event") {
    const file = display(path);
    unreadableAsProblem(c, path, () => {
      for (const entry of readJsonl(path)) {
        if (entry.problem) {
          c.add(file, `jsonl.${entry.problem}`, entry.message, entry.line);
          continue;
        }
        events++;
        for (const p of checkEvent(entry.value)) {
          c.add(file, eventRule(p, entry.value.phase), p.path ? `${p.path}: ${p.message}` : p.message, entry.line);
        }
        if (events % 100_000 === 0) options.onProgress?.(file, events);
      }
    });
  } else if (schema === "learn") {
    learnLines = unreadableAsProblem(c, path, () => checkLearnFile(c, path, options)) ?? 0;
  } else {
    checkJsonArtifact(c, path, schema);
  }
  return {
    target: display(path),
    episode_id: null,
    lifecycle: null,
    ...verdict(c, options),
    checked: { files: [name], events, learn_lines: learnLines },
    ...profileOf(c, options),
  };
}

/**
 * Validates an episode id, an episode directory, or a single artifact file.
 *
 * @example
 * ```ts
 * import { validate } from "noema";
 * const report = validate("ep_01K9RBBMXXRSFWR49SXFGF4SPR", { root: ".noema" });
 * console.log(report.valid);
 * ```
 */
export function validate(ref: string, options: ValidateOptions & { schema?: SchemaName } = {}): ValidationReport {
  if (existsSync(ref) && statSync(ref).isFile()) return validateFile(ref, options);
  const loc = locateEpisode(ref, options);
  return validateEpisodeDir(loc.dir, options);
}
