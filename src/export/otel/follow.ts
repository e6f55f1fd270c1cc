/**
 * Following an episode's files for spans: the complete lines appended to
 * `events.jsonl` and to the model-turn files since the last read go through
 * one {@link EpisodeSpans}, which returns the spans they complete. Reading a
 * finished episode once and following a running one (read after read) give
 * the same spans, so a live export and `noema export otel` agree.
 *
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Resource } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { readNewLines } from "../../shared_store/line_tail.ts";
import { SCOPE } from "./exporter.ts";
import { MODEL_TURN_FILES, type ModelTurnReader, modelTurnReader } from "./model_turns.ts";
import { type EpisodeEvent, EpisodeSpans } from "./spans.ts";

const decoder = new TextDecoder();

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

  /** The spans completed by the lines written since the last read (a file not there yet is read later). */
  read(): ReadableSpan[] {
    const out: ReadableSpan[] = [];
    for (const t of this.#tails) {
      if (!existsSync(t.path)) continue;
      for (;;) {
        const { lines, offset } = readNewLines(t.path, t.offset);
        t.offset = offset;
        for (const bytes of lines) this.#line(t, bytes, out);
        if (lines.length === 0) break;
      }
    }
    return out;
  }

  #line(t: Tail, bytes: Uint8Array, out: ReadableSpan[]): void {
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(decoder.decode(bytes));
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
