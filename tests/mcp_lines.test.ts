/**
 * The stdio framing of `noema mcp` (src/agents/mcp/lines.ts): lines handed on
 * as sent, and a line over the limit dropped whole; and the HTTP gateway's
 * events (src/agents/mcp/sse.ts): data over the limit dropped unread.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LineSplitter } from "../src/agents/mcp/lines.ts";
import { type SseEvent, SseParser } from "../src/agents/mcp/sse.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("LineSplitter", () => {
  it("hands on each line as sent, across chunks, without its \\r", () => {
    const lines: string[] = [];
    const s = new LineSplitter((l) => lines.push(l));
    s.push(bytes('{"a":1}\r\n{"b"'));
    s.push(bytes(":2}\n\n"));
    assert.deepEqual(lines, ['{"a":1}', '{"b":2}']);
  });

  it("drops a line over the limit whole, never its head joined to its tail, and goes on after it", () => {
    const lines: string[] = [];
    const s = new LineSplitter((l) => lines.push(l), 100);
    s.push(bytes('{"before":1}\n{"text":"' + "x".repeat(60)));
    assert.throws(() => s.push(bytes("y".repeat(60))), /a message longer than 100 bytes: dropped/);
    s.push(bytes("z".repeat(60))); // still the long line: dropped, said once
    s.push(bytes('zz"}\n{"after":2}\n'));
    assert.deepEqual(lines, ['{"before":1}', '{"after":2}'], "the long line's head and tail were never a message");
  });
});

describe("SseParser's limit (the HTTP gateway's events)", () => {
  it("drops an event's data over the limit unread, however it is cut into chunks and lines, and goes on after it", async () => {
    const events: SseEvent[] = [];
    const p = new SseParser((e) => void events.push(e), 100);
    await p.push('data: {"before":1}\n\nid: 7\ndata: {"text":"' + "x".repeat(60));
    await p.push("y".repeat(60)); // one line over the limit: not kept, whatever follows in it
    await p.push('"}\n\ndata: ' + "a".repeat(60) + "\ndata: " + "b".repeat(60) + "\n\n"); // two lines, over together
    await p.push('data: {"after":2}\n\n');
    await p.end();
    assert.deepEqual(events.map((e) => [e.data, e.oversized ?? false, e.id]), [
      ['{"before":1}', false, undefined],
      [null, true, "7"],
      [null, true, undefined],
      ['{"after":2}', false, undefined],
    ]);
  });
});

describe("SseParser's order (the HTTP gateway's events)", () => {
  it("hands on one event at a time: the next is not started before the one before it is done", async () => {
    const log: string[] = [];
    let release!: () => void;
    const first = new Promise<void>((r) => release = r);
    const p = new SseParser(async (e) => {
      log.push(`start ${e.data}`);
      if (e.data === "result") await first; // a tools/call result, being recorded
      log.push(`done ${e.data}`);
    });
    const pushed = p.push("data: result\n\ndata: notification\n\ndata: last\n\n");
    for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0));
    assert.deepEqual(log, ["start result"], "nothing after the first event began while it was handled");
    release();
    await pushed;
    await p.end();
    assert.deepEqual(log, [
      "start result",
      "done result",
      "start notification",
      "done notification",
      "start last",
      "done last",
    ]);
  });
});
