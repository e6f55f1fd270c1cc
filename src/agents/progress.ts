/**
 * Following an episode's event log while other processes (an agent's hooks)
 * append to it, to show progress: each complete new line is parsed and
 * handed to a callback.
 *
 * @module
 */
import { closeSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import type { WrittenEvent } from "../runtime/recorder.ts";
import { ARTIFACTS } from "../store/layout.ts";

/** A follower; `stop()` it (it reads what is left first). */
export interface EventFollower {
  stop(): void;
}

/**
 * Calls `onEvent` for each event appended to `<dir>/events.jsonl`, from
 * byte `offset` on, polling every `intervalMs`.
 *
 * @example
 * ```ts
 * import { followEvents } from "./progress.ts";
 * const f = followEvents(".noema/episodes/ep_1", (e) => console.log(e.phase));
 * f.stop();
 * ```
 */
export function followEvents(
  dir: string,
  onEvent: (event: WrittenEvent) => void,
  options: { offset?: number; intervalMs?: number } = {},
): EventFollower {
  let offset = options.offset ?? 0;
  let rest = "";
  const path = join(dir, ARTIFACTS.events);
  const poll = () => {
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch {
      return;
    }
    try {
      const buf = new Uint8Array(1 << 16);
      for (;;) {
        const n = readSync(fd, buf, 0, buf.length, offset);
        if (n <= 0) break;
        offset += n;
        rest += new TextDecoder().decode(buf.subarray(0, n));
      }
    } finally {
      closeSync(fd);
    }
    const lines = rest.split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) {
      try {
        const e = JSON.parse(line);
        if (typeof e?.phase === "string" && typeof e.payload === "object") onEvent(e as WrittenEvent);
      } catch {
        // a damaged line is validate's business, not progress's
      }
    }
  };
  const timer = setInterval(poll, options.intervalMs ?? 150);
  return {
    stop() {
      clearInterval(timer);
      poll();
    },
  };
}
