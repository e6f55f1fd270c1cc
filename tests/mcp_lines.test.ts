/**
 * The stdio framing of `noema mcp` (src/agents/mcp/lines.ts): lines handed on
 * as sent, and a line over the limit dropped whole.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LineSplitter } from "../src/agents/mcp/lines.ts";

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
