/**
 * Following an episode's files for spans: the complete lines appended to
 * `events.jsonl` and to the model-turn files since the last read go through
 * one {@link EpisodeSpans}, which returns the spans they complete. Reading a
 * finished episode once and following a running one (read after read) give
 * the same spans, so a live export and `noema export otel` agree. Files are
 * read in chunks of 1 MiB decoded at once; a line that changes no span (a
 * state projection, the plan) is not parsed.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { closeSync, existsSync, fstatSync, readFileSync, readSync } from "node:fs";
import { join } from "node:path";
import type { Resource } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { openRegularFile } from "../../store/regular_file.ts";
import { SCOPE } from "./exporter.ts";
import { MODEL_TURN_FILES, type ModelTurnReader, modelTurnReader } from "./model_turns.ts";
import { type EpisodeEvent, EpisodeSpans } from "./spans.ts";

/** How much of a file one read takes. */
const CHUNK = 1 << 20;

/** Phases whose events make no span and change none: not parsed at all (the runtime's state projections are large). */
const SKIPPED =
  /"phase":"(?:observe|interpret|plan|reflect|learn|insight|runtime","event_type":"run\.state_projection)"/;

/**
 * Whether an event line may matter to a span, decided on its head before
 * parsing it. An action candidate only matters for the agent's call id.
 */
function spanEvent(line: string): boolean {
  const head = line.slice(0, 400);
  if (SKIPPED.test(head)) return false;
  return !head.includes('"phase":"action_candidate"') || line.includes('"call_id":');
}

/** One followed file: where the next read starts. */
interface Tail {
  path: string;
  offset: number;
  turns: ModelTurnReader | null;
}

/**
 * Reads an episode's records into spans, a read at a time.
 *
 * @example
 * ```ts
 * const f = new EpisodeFollower(dir, id, { resource: otelResource(), capture: false });
 * const spans = [...f.read(), f.root()!];
 * ```
 */
export class EpisodeFollower {
  readonly spans: EpisodeSpans;
  readonly #dir: string;
  readonly #tails: Tail[];

  constructor(dir: string, episodeId: string, options: { resource: Resource; capture?: boolean }) {
    this.#dir = dir;
    this.spans = new EpisodeSpans({
      episodeId,
      dir,
      resource: options.resource,
      scope: SCOPE,
      capture: options.capture,
    });
    this.#tails = [
      { path: join(dir, "events.jsonl"), offset: 0, turns: null },
      ...MODEL_TURN_FILES.map((f) => ({ path: join(dir, f), offset: 0, turns: modelTurnReader(f) })),
    ];
  }

  /** Whether the last {@link read} stopped at its byte budget, with lines left to read. */
  more = false;

  /**
   * The spans completed by the lines written since the last read, reading at
   * most about `maxBytes` (then {@link more} is set); a file not there yet is
   * read later.
   */
  read(maxBytes = Infinity): ReadableSpan[] {
    const out: ReadableSpan[] = [];
    let budget = maxBytes;
    this.more = false;
    for (const t of this.#tails) {
      if (budget <= 0) {
        this.more = true;
        break;
      }
      const before = t.offset;
      if (this.#readTail(t, before + budget, out)) this.more = true;
      budget -= t.offset - before;
    }
    return out;
  }

  /** Where the next read of each file starts (`events.jsonl` first, then the model-turn files). */
  offsets(): number[] {
    return this.#tails.map((t) => t.offset);
  }

  /**
   * Reads the files up to `offsets` (from {@link offsets}, of an earlier
   * reader) for their state only: the spans they complete were sent already.
   */
  skipTo(offsets: readonly number[]): void {
    this.#tails.forEach((t, i) => this.#readTail(t, offsets[i] ?? 0, []));
  }

  /**
   * Reads the complete lines of `t` from its offset up to about `end` (at
   * least one line, however long); true when it stopped with more to read.
   */
  #readTail(t: Tail, end: number, out: ReadableSpan[]): boolean {
    if (t.offset >= end || !existsSync(t.path)) return false;
    const fd = openRegularFile(t.path);
    try {
      const size = fstatSync(fd).size;
      let want = Math.min(CHUNK, end - t.offset);
      while (t.offset < Math.min(end, size)) {
        const n = Math.min(want, size - t.offset);
        const buf = Buffer.allocUnsafe(n);
        const got = readSync(fd, buf, 0, n, t.offset);
        // The lines that end by `end`; past it only one line, the one that must be read to go on at all.
        const within = Math.min(got, end - t.offset);
        let nl = within > 0 ? buf.lastIndexOf(10, within - 1) : -1;
        if (nl < 0) nl = buf.subarray(0, got).indexOf(10);
        if (nl < 0) {
          if (t.offset + got >= size) return false; // a line still being written
          want = got * 2; // a line longer than the chunk
          continue;
        }
        const text = buf.toString("utf8", 0, nl);
        t.offset += nl + 1;
        for (const line of text.split("\n")) this.#line(t, line, out);
        want = Math.min(CHUNK, end - t.offset);
      }
      return t.offset < size && t.offset >= end;
    } finally {
      closeSync(fd);
    }
  }

  #line(t: Tail, line: string, out: ReadableSpan[]): void {
    if (line === "" || (t.turns === null && !spanEvent(line))) return;
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line);
    } catch {
      return; // a damaged line: `noema validate` reports it; the trace goes on without it
    }
    if (record === null || typeof record !== "object") return;
    if (t.turns === null) {
      out.push(...this.spans.event(record as unknown as EpisodeEvent));
      return;
    }
    const turn = t.turns.next(record);
    if (turn !== null) out.push(this.spans.turn(turn));
  }

  /** The root span as the files stand (with `summary.json` when the run wrote it), or null before `start`. */
  root(): ReadableSpan | null {
    let summary: Record<string, unknown> | null = null;
    try {
      const p = join(this.#dir, "summary.json");
      if (existsSync(p)) summary = JSON.parse(readFileSync(p, "utf8"));
    } catch {
      summary = null;
    }
    return this.spans.root(summary);
  }
}
