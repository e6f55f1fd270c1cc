/**
 * Server-sent events as the HTTP gateway reads and relays them: parsed as
 * the HTML standard says a client parses them (a leading BOM dropped; lines
 * ended by CRLF, LF or a lone CR; `field: value` with one space dropped;
 * `data` lines joined by newlines; a blank line ends an event), and written
 * out again in one plain form. So the client reads exactly the events the
 * gateway read and governed: a stream spelled otherwise cannot carry a
 * message past the gateway that the client's parser still finds (as events
 * ended by lone CRs did).
 *
 * @module
 */

/** One event block: its fields as read (the last of each wins), and its comment lines. */
export interface SseEvent {
  /** The `data` lines joined by `\n`; null when the block had none (or its data was over the limit: `oversized`). */
  data: string | null;
  /** Its data was longer than the parser's limit: dropped unread, as a stdio line over the limit is. */
  oversized?: boolean;
  event?: string;
  id?: string;
  retry?: string;
  comments: string[];
}

/**
 * Parses a stream of text chunks into event blocks, as a client does.
 *
 * @example
 * ```ts
 * import { SseParser } from "./sse.ts";
 * const events: unknown[] = [];
 * const p = new SseParser((e) => events.push(e));
 * p.push("\ufeffdata: {\"a\":1}\r\r"); // one event, data '{"a":1}'
 * ```
 */
export class SseParser {
  #line = "";
  /** The line being read is over the limit: its text is not kept. */
  #lineOver = false;
  readonly #max: number;
  #start = true;
  /** The last chunk ended with a CR: an LF first in the next one ends no other line. */
  #afterCr = false;
  #block: SseEvent = { data: null, comments: [] };
  #fields = false;
  readonly #onEvent: (e: SseEvent) => void | Promise<void>;

  /** `maxChars`: the most an event's data (or any line) may hold; past it the data is dropped unread. */
  constructor(onEvent: (e: SseEvent) => void | Promise<void>, maxChars = Infinity) {
    this.#onEvent = onEvent;
    this.#max = maxChars;
  }

  /**
   * Adds text; returns once the events it completed were handed on, one at a time and in order: each event's
   * callback is awaited before the next event's begins (so a call's result is relayed before a notification or a
   * second answer that followed it, however long recording the result takes). Await each push before the next.
   */
  async push(text: string): Promise<void> {
    if (this.#start && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      this.#start = false;
    }
    let i = 0;
    if (this.#afterCr && text[0] === "\n") i = 1;
    this.#afterCr = false;
    for (;;) {
      const m = /\r\n|\r|\n/g;
      m.lastIndex = i;
      const hit = m.exec(text);
      if (hit === null) break;
      if (hit[0] === "\r" && hit.index === text.length - 1) this.#afterCr = true;
      const event = this.#lineDone(this.#lineOver ? null : this.#line + text.slice(i, hit.index));
      this.#line = "";
      this.#lineOver = false;
      i = hit.index + hit[0].length;
      if (event !== null) await this.#onEvent(event);
    }
    this.#keep(text.slice(i));
  }

  /** Keeps the start of an unended line, unless it is over the limit (then nothing more of it is kept). */
  #keep(part: string): void {
    if (this.#lineOver || part === "") return;
    if (this.#line.length + part.length > this.#max) {
      this.#line = "";
      this.#lineOver = true;
    } else this.#line += part;
  }

  /** The stream ended: the last line and block, if not ended, are taken as ended (the relay ends them). */
  end(): Promise<void> {
    if (this.#line !== "" || this.#lineOver) this.#lineDone(this.#lineOver ? null : this.#line);
    this.#line = "";
    this.#lineOver = false;
    this.#afterCr = false;
    return this.push("\n");
  }

  /**
   * One line (null: over the limit, unread: the block's data is dropped); the event it ended, if it ended one (a blank
   * line after fields), for the caller to hand on.
   */
  #lineDone(line: string | null): SseEvent | null {
    if (line === null || (this.#block.data?.length ?? 0) + line.length > this.#max) {
      this.#fields = true;
      this.#block.data = null;
      this.#block.oversized = true;
      return null;
    }
    if (line === "") {
      const ended = this.#fields ? this.#block : null;
      this.#block = { data: null, comments: [] };
      this.#fields = false;
      return ended;
    }
    this.#fields = true;
    if (line.startsWith(":")) return (this.#block.comments.push(line.slice(1)), null);
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data" && this.#block.oversized) return null;
    if (field === "data") this.#block.data = this.#block.data === null ? value : `${this.#block.data}\n${value}`;
    else if (field === "event" || field === "id" || field === "retry") this.#block[field] = value;
    return null;
  }
}

/**
 * An event block in plain form (LF line ends, `data` split on its newlines), ended by a blank line.
 *
 * @example
 * ```ts
 * import { sseText } from "./sse.ts";
 * sseText({ event: "message", id: "1", data: "{}", comments: [] }); // "event: message\nid: 1\ndata: {}\n\n"
 * ```
 */
export function sseText(e: SseEvent): string {
  const lines = e.comments.map((c) => `:${oneLine(c)}`);
  if (e.event !== undefined) lines.push(`event: ${oneLine(e.event)}`);
  if (e.id !== undefined) lines.push(`id: ${oneLine(e.id)}`);
  if (e.retry !== undefined) lines.push(`retry: ${oneLine(e.retry)}`);
  if (e.data !== null) { for (const d of e.data.split(/\r\n|\r|\n/)) lines.push(`data: ${d}`); }
  return lines.join("\n") + "\n\n";
}

/** A field's value never holds a line end (a parsed one cannot); kept so in case. */
function oneLine(s: string): string {
  return s.replace(/[\r\n]/g, "");
}
