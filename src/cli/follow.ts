/**
 * Following a live episode: new lines of `events.jsonl` as they are written,
 * until the run ends (its `manifest.json`, written last, exists), pauses (a `run.checkpoint`
 * with nobody holding the lock), or turns out to have no live writer.
 *
 * Only whole lines (ending in a newline) are read: an append in progress is
 * picked up on the next poll, never torn.
 *
 * @module
 */
import { closeSync, existsSync, fstatSync, readSync } from "node:fs";
import { Buffer } from "node:buffer";
import { episodePaths } from "../read/episode.ts";
import { lockStatus } from "../store/lock.ts";
import { sessionIdle } from "../read/session_idle.ts";
import { openRegularFile } from "../store/regular_file.ts";
import { parseObject } from "../json.ts";

/** One event line read while following. */
export interface FollowedLine {
  /** 1-based line number in `events.jsonl`. */
  line: number;
  /** The line as written (without the newline). */
  text: string;
  /** The parsed event, or `null` when the line is not a JSON object. */
  value: Record<string, unknown> | null;
}

/** Why following stopped. */
export type FollowEnd = "terminal" | "paused" | "not_running" | "aborted";

/** Options of {@link followEvents}. */
export interface FollowOptions {
  /** How often to look for new lines, in ms. @default {100} */
  pollMs?: number;
  /** How long to wait without a live lock holder before giving up on a run that is not terminal, in ms. @default {3000} */
  graceMs?: number;
  /** Stops following. */
  signal?: AbortSignal;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Most bytes read per poll (more when one line is longer): memory stays bounded on a long log. */
const CHUNK = 4 << 20;

/**
 * Reads the whole lines written since `offset`, at most about {@link CHUNK}
 * bytes of them; returns them, the new offset and whether more is waiting.
 */
function readNew(path: string, offset: number): { texts: string[]; offset: number; more: boolean } {
  if (!existsSync(path)) return { texts: [], offset, more: false };
  const fd = openRegularFile(path, path, { noFollow: true }); // an episode's log: a link planted there is not read
  try {
    const size = fstatSync(fd).size;
    for (let want = Math.min(size - offset, CHUNK); want > 0; want = Math.min(size - offset, want * 2)) {
      const buf = Buffer.allocUnsafe(want);
      let got = 0;
      while (got < want) {
        const n = readSync(fd, buf, got, want - got, offset + got);
        if (n === 0) break;
        got += n;
      }
      const last = buf.lastIndexOf(10, got - 1);
      if (last >= 0) {
        const texts = buf.subarray(0, last).toString("utf8").split("\n").map((t) => t.replace(/\r$/, ""));
        return { texts, offset: offset + last + 1, more: offset + last + 1 < size };
      }
      if (want >= size - offset) break; // a line still being written
    }
    return { texts: [], offset, more: false };
  } finally {
    closeSync(fd);
  }
}

/**
 * Yields every event line of an episode, the existing ones first, then new
 * ones as they are appended, and returns why it stopped.
 *
 * @example
 * ```ts
 * import { followEvents } from "./follow.ts";
 * const it = followEvents("/tmp/.noema/episodes/ep_1");
 * for (let r = await it.next(); !r.done; r = await it.next()) console.log(r.value.text);
 * ```
 */
export async function* followEvents(dir: string, options: FollowOptions = {}): AsyncGenerator<FollowedLine, FollowEnd> {
  const paths = episodePaths(dir);
  const pollMs = options.pollMs ?? 100, graceMs = options.graceMs ?? 3000;
  let offset = 0, line = 0, lastType = "", idleSince: number | null = null;
  while (true) {
    if (options.signal?.aborted) return "aborted";
    const lock = lockStatus(dir).state;
    // manifest.json is written last, after every event; a summary without a live writer is as final.
    const terminalBefore = existsSync(paths.manifest) || (existsSync(paths.summary) && lock !== "held");
    const batch = readNew(paths.events, offset);
    offset = batch.offset;
    for (const text of batch.texts) {
      line++;
      const value = parseObject(text);
      lastType = typeof value?.event_type === "string" ? value.event_type : String(value?.phase ?? "");
      yield { line, text, value };
    }
    if (batch.more) continue; // the rest of a long log: read on without waiting
    if (batch.texts.length > 0) idleSince = null;
    // Seen terminal before this read: everything is read.
    if (terminalBefore) return "terminal";
    if (lock !== "held") {
      if (lastType === "run.checkpoint") return "paused";
      if (sessionIdle(dir)) idleSince = null; // an agent session between two hook calls: its next call continues it
      else if (Date.now() - (idleSince ??= Date.now()) >= graceMs) return "not_running";
    } else idleSince = null;
    await sleep(pollMs);
  }
}
