// Claude Code's model turns read from crafted transcripts: one turn per message id, torn and malformed lines,
// incremental reads, a huge transcript in bounded memory, and the session's cursor across episodes.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { spawn } from "node:child_process";
import process from "node:process";
import { type ClaudeTurn, readTurns, START } from "../src/agents/claude_code/transcript_turns.ts";
import { cursorPath, readCursor, recordTranscriptTurns } from "../src/agents/claude_code/model_turns.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-transcript-");
after(() => tmp.cleanup());
// The fixture's messages all end asking for a tool: a final read would wait for an answer that never comes.
process.env.NOEMA_TRANSCRIPT_SETTLE_MS = "0";
let n = 0;
const file = (text = "") => {
  const path = join(tmp.path, `t${++n}.jsonl`);
  writeFileSync(path, text);
  return path;
};

/** One transcript line of an assistant message block, as Claude Code writes it. */
function assistant(id: string, u: [number, number, number?, number?], block = "text", model = "claude-opus-5-5") {
  return JSON.stringify({
    parentUuid: null,
    isSidechain: false,
    type: "assistant",
    uuid: `u-${id}-${block}`,
    timestamp: "2026-11-26T10:00:00.000Z",
    message: {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [{ type: block }],
      stop_reason: "tool_use",
      usage: {
        input_tokens: u[0],
        output_tokens: u[1],
        cache_creation_input_tokens: u[2] ?? 0,
        cache_read_input_tokens: u[3] ?? 0,
        service_tier: "standard",
      },
    },
  }) + "\n";
}
const user = (text: string) =>
  JSON.stringify({ type: "user", message: { role: "user", content: [{ type: "tool_result", content: text }] } }) +
  "\n";

const collect = (path: string, from = START, final = false) => {
  const turns: ClaudeTurn[] = [];
  const at = readTurns(path, from, (t) => turns.push(t), { final });
  return { turns, at };
};

describe("readTurns", () => {
  test("a message written as several lines (one per block) is one turn, with its last line's usage", () => {
    const path = file(
      assistant("msg_1", [10, 1], "text") + assistant("msg_1", [10, 7], "tool_use") + user("ok") +
        assistant("msg_1", [10, 9], "tool_use") + assistant("msg_2", [20, 3, 5, 100]),
    );
    const { turns, at } = collect(path, START, true);
    assert.deepEqual(turns.map((t) => [t.message_id, t.usage.output_tokens]), [["msg_1", 9], ["msg_2", 3]]);
    assert.deepEqual(turns[1].usage, {
      input_tokens: 20,
      output_tokens: 3,
      cache_creation_input_tokens: 5,
      cache_read_input_tokens: 100,
    });
    assert.equal(at.pending, null);
  });

  test("the last message is held back until another follows or the read is final", () => {
    const path = file(assistant("msg_1", [1, 1]) + assistant("msg_2", [2, 2]));
    const first = collect(path);
    assert.deepEqual(first.turns.map((t) => t.message_id), ["msg_1"]);
    assert.equal(first.at.pending?.message_id, "msg_2");
    // More blocks of msg_2 arrive: still one turn.
    appendFileSync(path, assistant("msg_2", [2, 6], "tool_use"));
    const second = collect(path, first.at, true);
    assert.deepEqual(second.turns.map((t) => [t.message_id, t.usage.output_tokens]), [["msg_2", 6]]);
  });

  test("a torn last line is left for the next read; malformed lines and other entries are skipped", () => {
    const whole = assistant("msg_1", [3, 1]);
    const torn = assistant("msg_2", [4, 2]);
    const path = file(
      "{not json\n" + '{"type":"assistant","message":{"usage":' + "\n" + whole + "\n" + user("x") +
        '{"type":"assistant","message":{"id":"s","model":"<synthetic>","usage":{"input_tokens":9}}}\n' +
        torn.slice(0, 40),
    );
    const first = collect(path, START, true);
    assert.deepEqual(first.turns.map((t) => t.message_id), ["msg_1"]);
    assert.equal(first.at.offset, readFileSync(path).length - 40, "the torn line is not consumed");
    appendFileSync(path, torn.slice(40));
    const second = collect(path, first.at, true);
    assert.deepEqual(second.turns.map((t) => [t.message_id, t.usage.input_tokens]), [["msg_2", 4]]);
  });

  test("reads in several steps count what one read counts, each message once", () => {
    const lines = Array.from({ length: 60 }, (_, i) => assistant(`msg_${i >> 1}`, [i, 1], i % 2 ? "tool_use" : "text"));
    const whole = file(lines.join(""));
    const once = collect(whole, START, true).turns;
    const path = file();
    let at = START;
    const stepwise: ClaudeTurn[] = [];
    for (let i = 0; i < lines.length; i += 7) {
      appendFileSync(path, lines.slice(i, i + 7).join(""));
      at = readTurns(path, at, (t) => stepwise.push(t));
    }
    at = readTurns(path, at, (t) => stepwise.push(t), { final: true });
    assert.equal(once.length, 30);
    assert.deepEqual(stepwise, once);
    // A transcript read again from its start (rewritten: it shrank) counts nothing twice.
    writeFileSync(path, lines.slice(-4).join(""));
    assert.deepEqual(collect(path, at, true).turns, []);
  });

  test("a missing transcript reads as empty", () => {
    assert.deepEqual(collect(join(tmp.path, "none.jsonl"), START, true).turns, []);
  });

  test("a 96 MiB transcript (lines of 20 MiB among them) is read in bounded memory", () => {
    const path = join(tmp.path, "huge.jsonl");
    const fd = openSync(path, "w");
    const big = Buffer.alloc(20 * 1024 * 1024, "a");
    const part = Buffer.alloc(2 * 1024 * 1024, "b");
    let expected = 0;
    try {
      for (let i = 0; i < 4; i++) {
        writeSync(fd, `{"type":"user","message":{"content":"`);
        writeSync(fd, big); // a tool result too long to hold: skipped
        writeSync(fd, `"}}\n`);
        writeSync(fd, assistant(`big_${i}`, [1000, 10]));
        expected++;
        for (let j = 0; j < 2; j++) {
          writeSync(fd, `{"type":"user","message":{"content":"`);
          writeSync(fd, part);
          writeSync(fd, `"}}\n`);
        }
      }
    } finally {
      closeSync(fd);
    }
    const peak = process.resourceUsage().maxRSS; // KiB
    const { turns } = collect(path, START, true);
    const grew = (process.resourceUsage().maxRSS - peak) / 1024;
    assert.equal(turns.length, expected);
    assert.ok(grew < 48, `the peak resident size grew by ${grew.toFixed(1)} MiB reading 96 MiB`);
  });
});

describe("recordTranscriptTurns", () => {
  test("model.jsonl gets a line per turn; a session's next episode reads on where the last one stopped", () => {
    const root = join(tmp.path, "root"), ep1 = join(tmp.path, "ep1"), ep2 = join(tmp.path, "ep2");
    for (const d of [root, ep1, ep2]) mkdirSync(d, { recursive: true });
    const path = file(assistant("msg_1", [10, 5, 2, 3]) + assistant("msg_2", [1, 1]));
    const target = { root, session: "sess-1", transcript: path, episodeId: "ep_1", dir: ep1 };
    assert.deepEqual(recordTranscriptTurns(target), {
      "claude-opus-5-5": { input: 15, output: 5, cache_write: 2, cache_read: 3, model_calls: 1 },
    });
    const models = recordTranscriptTurns({ ...target, transcript: null, final: true }); // the path the cursor knows
    assert.equal(models?.["claude-opus-5-5"].model_calls, 2);
    const lines = readFileSync(join(ep1, "model.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => [l.turn, l.model, l.message_id, l.response.usage.input_tokens]), [
      [1, "claude-opus-5-5", "msg_1", 10],
      [2, "claude-opus-5-5", "msg_2", 1],
    ]);
    appendFileSync(path, assistant("msg_3", [7, 7], "text", "claude-haiku-4-5"));
    const next = recordTranscriptTurns({ ...target, episodeId: "ep_2", dir: ep2, final: true });
    assert.deepEqual(next, {
      "claude-haiku-4-5": { input: 7, output: 7, cache_write: 0, cache_read: 0, model_calls: 1 },
    });
    assert.equal(JSON.parse(readFileSync(join(ep2, "model.jsonl"), "utf8")).turn, 1);
    assert.equal(readCursor(root, "sess-1")?.episode_id, "ep_2");
    assert.doesNotMatch(cursorPath(root, "sess-1"), /sess-1/, "the cursor file is named by a digest");
  });

  test("subagents' transcripts (<session>/subagents/agent-*.jsonl) are read too, each turn once", () => {
    const root = join(tmp.path, "root-sub"), ep = join(tmp.path, "ep-sub");
    for (const d of [root, ep]) mkdirSync(d, { recursive: true });
    const path = join(tmp.path, "sess-sub.jsonl");
    writeFileSync(path, assistant("msg_main", [10, 1]));
    const sub = join(tmp.path, "sess-sub", "subagents");
    mkdirSync(join(sub, "nested"), { recursive: true });
    writeFileSync(join(sub, "agent-a1.jsonl"), assistant("msg_a", [5, 2], "text", "claude-haiku-4-5"));
    writeFileSync(join(sub, "nested", "agent-b2.jsonl"), assistant("msg_b", [6, 3], "text", "claude-haiku-4-5"));
    writeFileSync(join(sub, "notes.jsonl"), assistant("msg_x", [99, 99])); // not a subagent transcript
    const target = { root, session: "sess-sub", transcript: path, episodeId: "ep_s", dir: ep };
    recordTranscriptTurns(target);
    appendFileSync(join(sub, "agent-a1.jsonl"), assistant("msg_a2", [7, 4], "text", "claude-haiku-4-5"));
    const models = recordTranscriptTurns({ ...target, final: true });
    assert.deepEqual(models, {
      "claude-opus-5-5": { input: 10, output: 1, cache_write: 0, cache_read: 0, model_calls: 1 },
      "claude-haiku-4-5": { input: 18, output: 9, cache_write: 0, cache_read: 0, model_calls: 3 },
    });
    const lines = readFileSync(join(ep, "model.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => [l.message_id, l.sidechain]).sort(), [
      ["msg_a", true],
      ["msg_a2", true],
      ["msg_b", true],
      ["msg_main", false],
    ]);
  });

  test("the final read waits a moment for the answer that follows a tool call (Claude Code may run Stop first)", async () => {
    const root = join(tmp.path, "root-settle"), ep = join(tmp.path, "ep-settle");
    for (const d of [root, ep]) mkdirSync(d, { recursive: true });
    const path = file(assistant("msg_t", [10, 1]) + user("ok"));
    const answer = assistant("msg_end", [20, 3]).replace('"tool_use"', '"end_turn"');
    // Another process appends the answer 300 ms later, as Claude Code does after its Stop hook has started.
    const writer = spawn("sh", ["-c", 'sleep 0.3; printf "%s" "$0" >> "$1"', answer, path], { stdio: "ignore" });
    const exited = new Promise((ok) => writer.on("exit", ok));
    process.env.NOEMA_TRANSCRIPT_SETTLE_MS = "5000";
    try {
      const target = { root, session: "sess-settle", transcript: path, episodeId: "ep_t", dir: ep, final: true };
      assert.deepEqual(recordTranscriptTurns(target), {
        "claude-opus-5-5": { input: 30, output: 4, cache_write: 0, cache_read: 0, model_calls: 2 },
      });
    } finally {
      process.env.NOEMA_TRANSCRIPT_SETTLE_MS = "0";
      await exited;
    }
  });

  test("the final read keeps waiting while the transcript grows in pieces before the answer (a line cut in two)", async () => {
    const root = join(tmp.path, "root-pieces"), ep = join(tmp.path, "ep-pieces");
    for (const d of [root, ep]) mkdirSync(d, { recursive: true });
    const result = user("ok"), cut = Math.floor(result.length / 2);
    const path = file(assistant("msg_t", [10, 1]) + result.slice(0, cut));
    const rest = result.slice(cut) + JSON.stringify({ type: "last-prompt", lastPrompt: "make a file" }) + "\n";
    const answer = assistant("msg_end", [20, 3]).replace('"tool_use"', '"end_turn"');
    // What Claude Code does after its Stop hook started, slowed down: the rest of the line and a line that is no
    // turn, then, later, the answer.
    const writer = spawn("sh", [
      "-c",
      'sleep 0.2; printf "%s" "$0" >> "$2"; sleep 0.4; printf "%s" "$1" >> "$2"',
      rest,
      answer,
      path,
    ], {
      stdio: "ignore",
    });
    const exited = new Promise((ok) => writer.on("exit", ok));
    process.env.NOEMA_TRANSCRIPT_SETTLE_MS = "5000";
    try {
      const target = { root, session: "sess-pieces", transcript: path, episodeId: "ep_p", dir: ep, final: true };
      assert.deepEqual(recordTranscriptTurns(target), {
        "claude-opus-5-5": { input: 30, output: 4, cache_write: 0, cache_read: 0, model_calls: 2 },
      });
    } finally {
      process.env.NOEMA_TRANSCRIPT_SETTLE_MS = "0";
      await exited;
    }
  });

  test("no transcript known: null, nothing written", () => {
    const root = join(tmp.path, "root2");
    mkdirSync(root);
    assert.equal(
      recordTranscriptTurns({ root, session: "s", transcript: null, episodeId: "e", dir: root, final: true }),
      null,
    );
  });
});
