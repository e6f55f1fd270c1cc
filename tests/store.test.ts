/**
 * The episode store: ids, locating episodes (symlink refusal), atomic
 * writes, JSONL append and streaming read (torn, UTF-8, blank, CRLF, long
 * lines), and listing newest first.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import {
  episodeIdProblem,
  JsonlAppender,
  listEpisodes,
  locateEpisode,
  newEpisodeId,
  NoemaError,
  readJsonl,
  readLines,
  writeJsonAtomic,
} from "noema";
import { tempDir } from "./helpers/tmp.ts";
import { LOG_DIGEST_START_BYTES } from "../src/store/log_digest.ts";
import { stageManifest } from "../src/store/manifest.ts";
import { sha256File } from "../src/store/hash.ts";
import { runChild } from "./helpers/child.ts";
import { REPO, runtimeCommand } from "./helpers/cli.ts";
import process from "node:process";

const tmp = tempDir();
after(() => tmp.cleanup());

let n = 0;
/** A fresh directory under the test's temp dir. */
function fresh(name = "d"): string {
  const dir = join(tmp.path, `${name}-${n++}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Writes raw bytes to a new file and returns its path. */
function rawFile(bytes: string | Uint8Array): string {
  const path = join(fresh("raw"), "f.jsonl");
  writeFileSync(path, bytes);
  return path;
}

const summarize = (path: string, options = {}) =>
  [...readJsonl(path, options)].map((
    e,
  ) => (e.problem ? { line: e.line, problem: e.problem } : { line: e.line, value: e.value }));

describe("episode ids", () => {
  test("newEpisodeId is ep_<ULID> and sorts by time", () => {
    const early = newEpisodeId(Date.parse("2026-01-01T00:00:00Z"));
    const late = newEpisodeId(Date.parse("2026-06-01T00:00:00Z"));
    assert.match(early, /^ep_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.ok(early < late, `${early} < ${late}`);
  });

  test("ids made in the same millisecond are strictly increasing", () => {
    const now = Date.parse("2026-02-02T12:00:00Z");
    const ids = Array.from({ length: 200 }, () => newEpisodeId(now));
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, 200);
    assert.equal(new Set(ids.map((id) => id.slice(0, 13))).size, 1, "same time part");
  });

  test("episodeIdProblem accepts safe ids and rejects unsafe ones", () => {
    for (const ok of ["ep_01K9RBBMXXRSFWR49SXFGF4SPR", "run-1", "a.b_c", "X"]) {
      assert.equal(episodeIdProblem(ok), null, ok);
    }
    const bad: [string, RegExp][] = [
      ["", /empty/],
      ["..", /'\.\.'|start/],
      ["a..b", /'\.\.'/],
      ["../etc", /separator|'\.\.'/],
      ["a/b", /separator/],
      ["a\\b", /separator/],
      ["a\u0000b", /control/],
      ["a\nb", /control/],
      ["a\u007fb", /control/],
      [".hidden", /start/],
      ["x".repeat(129), /128/],
      ["a b", /letters/],
    ];
    for (const [id, why] of bad) {
      const problem = episodeIdProblem(id);
      assert.ok(problem !== null, `${JSON.stringify(id)} must be rejected`);
      assert.match(problem, why, JSON.stringify(id));
    }
  });
});

describe("locateEpisode", () => {
  test("finds an episode by id under <root>/episodes and by directory path", () => {
    const root = fresh("root");
    const dir = join(root, "episodes", "ep_1");
    mkdirSync(dir, { recursive: true });
    assert.deepEqual(locateEpisode("ep_1", { root }), { id: "ep_1", dir });
    assert.deepEqual(locateEpisode(dir), { id: "ep_1", dir });
    assert.throws(() => locateEpisode("ep_2", { root }), (e) => e instanceof NoemaError && e.code === "not_found");
    assert.throws(() => locateEpisode(join(root, "nope")), (e) => e instanceof NoemaError && e.code === "not_found");
    assert.throws(
      () => locateEpisode(".hidden", { root }),
      (e) => e instanceof NoemaError && e.code === "invalid_id" && e.exitCode === 2,
    );
  });

  test("refuses a symlinked episode directory that points outside the root; accepts one inside", () => {
    const root = fresh("root");
    const outside = fresh("outside");
    mkdirSync(join(root, "episodes", "real"), { recursive: true });
    symlinkSync(outside, join(root, "episodes", "ep_escape"));
    symlinkSync(join(root, "episodes", "real"), join(root, "episodes", "ep_alias"));
    assert.throws(() => locateEpisode("ep_escape", { root }), (e: unknown) => {
      assert.ok(e instanceof NoemaError);
      assert.equal(e.code, "unsafe_path");
      assert.match(e.message, /outside/);
      return true;
    });
    assert.equal(locateEpisode("ep_alias", { root }).dir, join(root, "episodes", "ep_alias"));
  });
});

describe("atomic writes", () => {
  test("writeJsonAtomic writes pretty JSON, leaves no temp files, file 0600 and new dirs 0700", () => {
    const base = fresh("atomic");
    const path = join(base, "a", "b", "state.json");
    writeJsonAtomic(path, { version: "1.0", n: 1 });
    writeJsonAtomic(path, { version: "1.0", n: 2 });
    assert.equal(readFileSync(path, "utf8"), '{\n  "version": "1.0",\n  "n": 2\n}\n');
    assert.deepEqual(readdirSync(join(base, "a", "b")), ["state.json"]);
    if (process.platform !== "win32") {
      assert.equal(statSync(path).mode & 0o777, 0o600);
      assert.equal(statSync(join(base, "a")).mode & 0o777, 0o700);
      assert.equal(statSync(join(base, "a", "b")).mode & 0o777, 0o700);
    }
  });

  test("a value with no JSON form fails without leaving a temp file", () => {
    const base = fresh("atomic");
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    assert.throws(() => writeJsonAtomic(join(base, "x.json"), cyclic), TypeError);
    assert.deepEqual(readdirSync(base), []);
  });
});

describe("JSONL", () => {
  test("JsonlAppender + readJsonl round trip, one line per append, mode 0600", () => {
    const path = join(fresh("jsonl"), "events.jsonl");
    const out = new JsonlAppender(path);
    const values = [{ id: "e1", text: "héllo ✓" }, { id: "e2", nested: { a: [1, null] } }, { id: "e3", nl: "a\nb" }];
    for (const v of values) assert.equal(out.append(v), JSON.stringify(v));
    out.sync();
    out.close();
    out.close(); // idempotent
    assert.throws(() => out.append({}), /after close/);
    assert.equal(readFileSync(path, "utf8").split("\n").length, 4);
    const entries = [...readJsonl(path)];
    assert.deepEqual(entries.map((e) => e.value), values);
    assert.deepEqual(entries.map((e) => e.line), [1, 2, 3]);
    assert.equal(entries[1].offset, Buffer.byteLength(JSON.stringify(values[0])) + 1);
    if (process.platform !== "win32") assert.equal(statSync(path).mode & 0o777, 0o600);
    // Appending again continues the file.
    const again = new JsonlAppender(path);
    again.append({ id: "e4" });
    again.close();
    assert.deepEqual([...readJsonl(path)].map((e) => e.value?.id), ["e1", "e2", "e3", "e4"]);
  });

  test("a buffered JsonlAppender writes its lines at flush, at sync/close, and by itself on the next turn", async () => {
    const path = join(fresh("jsonl"), "events.jsonl");
    const out = new JsonlAppender(path, { buffered: true });
    out.append({ id: "e1" });
    out.append({ id: "e2", text: "héllo ✓" });
    assert.equal(readFileSync(path, "utf8"), "", "held in memory until a flush");
    out.flush();
    assert.deepEqual([...readJsonl(path)].map((e) => e.value?.id), ["e1", "e2"]);
    out.append({ id: "e3" });
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual([...readJsonl(path)].map((e) => e.value?.id), ["e1", "e2", "e3"], "written on the next turn");
    out.append({ id: "e4" });
    out.close();
    assert.deepEqual([...readJsonl(path)].map((e) => e.value?.id), ["e1", "e2", "e3", "e4"]);
  });

  test("a buffered JsonlAppender's lines are written when the process dies of an uncaught error", async () => {
    const endings = {
      throw: `throw new Error("the driver crashed");`,
      rejection: `Promise.reject(new Error("the driver crashed"));`,
      exit: `console.error("the driver crashed"); process.exit(3);`,
    };
    for (const [how, ending] of Object.entries(endings)) {
      const path = join(fresh("jsonl"), "events.jsonl");
      const script = join(fresh("script"), "die.ts");
      writeFileSync(
        script,
        `import process from "node:process";
import { JsonlAppender } from ${JSON.stringify(join(REPO, "src", "store", "jsonl.ts"))};
const out = new JsonlAppender(${JSON.stringify(path)}, { buffered: true });
out.append({ id: "e1" });
out.append({ id: "e2" });
${ending}
`,
      );
      const [command, ...argv] = [...runtimeCommand(), script];
      const r = await runChild(command, argv, { timeoutMs: 60_000 });
      assert.notEqual(r.code, 0, how);
      assert.match(r.stderr, /the driver crashed/, how);
      assert.deepEqual([...readJsonl(path)].map((e) => e.value?.id), ["e1", "e2"], how);
    }
  });

  test("a buffered JsonlAppender writes by itself once 64 KiB wait, in whole lines, and grows for a long line", () => {
    const path = join(fresh("jsonl"), "events.jsonl");
    const out = new JsonlAppender(path, { buffered: true });
    const line = { pad: "x".repeat(1000) };
    let n = 0;
    while (statSync(path).size === 0) {
      out.append({ ...line, n: n++ });
      assert.ok(n < 200, "nothing written after 200 KB");
    }
    const written = readFileSync(path, "utf8");
    assert.ok(written.endsWith("\n"), "a batch ends at a line end");
    assert.ok(Buffer.byteLength(written) >= 60_000);
    out.append({ big: "é".repeat(200_000) }); // longer than the buffer: it grows, keeping what waits
    out.close();
    const values = [...readJsonl(path)].map((e) => e.value);
    assert.equal(values.length, n + 1);
    assert.deepEqual(values.slice(0, n).map((v) => v?.n), Array.from({ length: n }, (_, i) => i));
    assert.equal((values[n]?.big as string).length, 200_000);
  });

  test("a torn final line is reported as torn; a complete final line without a newline is accepted", () => {
    assert.deepEqual(summarize(rawFile('{"a":1}\n{"b":2')), [{ line: 1, value: { a: 1 } }, {
      line: 2,
      problem: "torn",
    }]);
    assert.deepEqual(summarize(rawFile('{"a":1}\n{"b":2}')), [{ line: 1, value: { a: 1 } }, {
      line: 2,
      value: { b: 2 },
    }]);
    const [last] = [...readLines(rawFile('{"b":2}'))];
    assert.equal(last.terminated, false);
  });

  test("invalid JSON on a terminated line is json, not torn", () => {
    assert.deepEqual(summarize(rawFile('{"a":1\n{"b":2}\n')), [{ line: 1, problem: "json" }, {
      line: 2,
      value: { b: 2 },
    }]);
  });

  test("invalid UTF-8 is reported as utf8 on its line; valid multibyte text is kept", () => {
    const bytes = new Uint8Array([...Buffer.from('{"a":"ok ✓"}\n{"b":"'), 0xff, 0xfe, ...Buffer.from('"}\n{"c":3}\n')]);
    assert.deepEqual(summarize(rawFile(bytes)), [
      { line: 1, value: { a: "ok ✓" } },
      { line: 2, problem: "utf8" },
      { line: 3, value: { c: 3 } },
    ]);
    // A literal U+FFFD in valid UTF-8 is not a decoding error.
    assert.deepEqual(summarize(rawFile('{"r":"\uFFFD"}\n')), [{ line: 1, value: { r: "\uFFFD" } }]);
  });

  test("blank lines and non-object lines are reported with their line numbers", () => {
    assert.deepEqual(summarize(rawFile('{"a":1}\n\n   \n[1,2]\n"s"\nnull\n42\n{"z":0}\n')), [
      { line: 1, value: { a: 1 } },
      { line: 2, problem: "blank" },
      { line: 3, problem: "blank" },
      { line: 4, problem: "not_object" },
      { line: 5, problem: "not_object" },
      { line: 6, problem: "not_object" },
      { line: 7, problem: "not_object" },
      { line: 8, value: { z: 0 } },
    ]);
    // Whitespace after the last newline is not a blank line.
    assert.deepEqual(summarize(rawFile('{"a":1}\n  ')), [{ line: 1, value: { a: 1 } }]);
    assert.deepEqual(summarize(rawFile("")), []);
  });

  test("CRLF line endings are read like LF", () => {
    const path = rawFile('{"a":1}\r\n{"b":"x\\r"}\r\n');
    assert.deepEqual(summarize(path), [{ line: 1, value: { a: 1 } }, { line: 2, value: { b: "x\r" } }]);
    assert.deepEqual([...readLines(path)].map((l) => [l.text, l.bytes]), [['{"a":1}', 8], ['{"b":"x\\r"}', 12]]);
  });

  test("a line spanning many read chunks is read whole, with correct offsets", () => {
    const long = { id: "long", data: "x".repeat(5000), utf8: "é✓".repeat(300) };
    const text = `{"first":true}\n${JSON.stringify(long)}\n{"last":true}\n`;
    const path = rawFile(text);
    for (const chunkSize of [1, 7, 64, 4096]) {
      const entries = [...readJsonl(path, { chunkSize })];
      assert.deepEqual(entries.map((e) => e.value), [{ first: true }, long, { last: true }], `chunkSize ${chunkSize}`);
      assert.deepEqual(entries.map((e) => e.offset), [0, 15, 15 + Buffer.byteLength(JSON.stringify(long)) + 1]);
    }
  });

  test("a line longer than maxLineBytes is skipped in bounded memory and reported with its line", () => {
    const path = rawFile(`{"ok":1}\n{"big":"${"y".repeat(500)}"}\n{"ok":2}\n{"tail":"${"z".repeat(300)}`);
    const ls = [...readLines(path, { chunkSize: 16, maxLineBytes: 100 })];
    assert.deepEqual(ls.map((l) => [l.line, l.tooLong === true, l.terminated]), [
      [1, false, true],
      [2, true, true],
      [3, false, true],
      [4, true, false],
    ]);
    assert.equal(ls[1].text, null);
    assert.equal(ls[1].bytes, 510);
    assert.equal(ls[2].text, '{"ok":2}');
    const problems = [...readJsonl(path, { chunkSize: 16, maxLineBytes: 100 })].map((e) => [e.line, e.problem]);
    assert.deepEqual(problems, [[1, undefined], [2, "too_long"], [3, undefined], [4, "torn"]]);
    // The same file is read whole under a higher limit.
    assert.equal([...readLines(path, { chunkSize: 16, maxLineBytes: 1000 })].filter((l) => l.tooLong).length, 0);
  });

  test(
    "a long log is flushed to disk in the background through a descriptor of its own, which follows a rename and is released",
    { skip: existsSync("/proc/self/fd") ? false : "no /proc/self/fd here" },
    async () => {
      const dir = fresh("behind");
      const out = new JsonlAppender(join(dir, "events.jsonl"));
      // The episode directory is renamed after its log was opened (a new episode moves into place).
      const moved = `${dir}-moved`;
      renameSync(dir, moved);
      const path = join(moved, "events.jsonl");
      /** The descriptors of this process open on the log (the writer's, and the background flush's). */
      const open = () =>
        readdirSync("/proc/self/fd").filter((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`) === path;
          } catch {
            return false; // closed since the listing
          }
        }).length;
      assert.equal(open(), 1);
      const line = JSON.stringify({ pad: "x".repeat(1024 * 1024) });
      for (let i = 0; i < 5; i++) out.append({ pad: "x".repeat(1024 * 1024) }); // over 4 MiB: a flush starts
      // (Deno's fdatasync works on a copy of the descriptor it is given: 3 there while the flush runs.)
      assert.ok(open() >= 2, "a read-only descriptor of its own, opened on the moved file");
      out.sync();
      out.close();
      assert.equal(statSync(path).size, 5 * (line.length + 1));
      // Released once its flush settled (completions arrive as the event loop turns).
      for (let i = 0; open() > 0 && i < 2000; i++) await new Promise((r) => setTimeout(r, 5));
      assert.equal(open(), 0, "no descriptor left open");
    },
  );

  test(
    "a long log is hashed on a worker as it is written: the digest at close is the file's; a short one is not hashed",
    { skip: existsSync("/proc/self/fd") ? false : "no /proc/self/fd here" },
    () => {
      const dir = fresh("digest");
      const long = new JsonlAppender(join(dir, "events.jsonl"), { buffered: true, digest: true });
      const line = JSON.stringify({ pad: "é".repeat(64 * 1024) }); // multi-byte: bytes, not characters, are counted
      while (statSync(join(dir, "events.jsonl")).size < LOG_DIGEST_START_BYTES + 9 * 1024 * 1024) {
        long.appendRaw(line);
        long.flush();
      }
      long.appendRaw('{"last":true}');
      const open = long.digest;
      assert.equal(open, null, "known once closed");
      long.close();
      const digest = long.digest!;
      assert.deepEqual(digest, sha256File(join(dir, "events.jsonl")));
      const short = new JsonlAppender(join(dir, "short.jsonl"), { digest: true });
      short.append({ a: 1 });
      short.close();
      assert.equal(short.digest, null, "a short log is hashed where it is sealed");
      // The manifest takes a known digest while the file has its size, and hashes a file whose size changed.
      writeFileSync(join(dir, "state.json"), "{}\n");
      const known = new Map([["events.jsonl", digest], ["state.json", { size_bytes: 99, sha256: "sha256:x" }]]);
      const manifest = readFileSync(
        stageManifest(dir, "ep_1", [], new Date().toISOString(), [], null, known).tmp,
        "utf8",
      );
      const files = JSON.parse(manifest).files as { name: string; sha256: string }[];
      assert.equal(files.find((f) => f.name === "events.jsonl")?.sha256, digest.sha256);
      assert.equal(files.find((f) => f.name === "state.json")?.sha256, sha256File(join(dir, "state.json")).sha256);
      // A process that appends a few lines to a long log (a hook call) never hashes it.
      const few = new JsonlAppender(join(dir, "events.jsonl"), { digest: true });
      few.append({ one: "more" });
      few.close();
      assert.equal(few.digest, null, "a few lines appended to a long log: not hashed by their writer");
    },
  );
});

describe("listEpisodes", () => {
  /** Writes a minimal readable episode (state.json, optional summary.json). */
  function episode(root: string, id: string, status: string, summary = false): string {
    const dir = join(root, "episodes", id);
    mkdirSync(dir, { recursive: true });
    writeJsonAtomic(join(dir, "state.json"), {
      version: "1.0",
      state_schema_version: "1.0.0",
      episode: { id, started_at: "2026-03-02T10:00:00.000Z" },
      goal: { task: `task of ${id}` },
      outcomes: { status },
    });
    if (summary) writeJsonAtomic(join(dir, "summary.json"), { outcome: "success_unverified", task: `task of ${id}` });
    return dir;
  }
  /**
   * An `ep_<ULID>` id for a given day, encoded here (not by newEpisodeId, whose monotonic
   * factory keeps the latest time seen in this process when given an earlier one).
   */
  function idOn(day: number, tail = "0"): string {
    const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let ms = Date.parse(`2026-03-${String(day).padStart(2, "0")}T10:00:00Z`);
    let time = "";
    for (let i = 0; i < 10; i++) {
      time = CROCKFORD[ms % 32] + time;
      ms = Math.floor(ms / 32);
    }
    return `ep_${time}${tail.padStart(16, "0")}`;
  }

  test("newest first (by the time in ep_<ULID> ids), honouring limit", () => {
    const root = fresh("list");
    const ids = [1, 3, 2].map((d) => idOn(d));
    episode(root, ids[0], "ok", true);
    episode(root, ids[1], "pending");
    episode(root, ids[2], "error", true);
    const all = listEpisodes({ root });
    assert.deepEqual(all.map((e) => e.episode_id), [ids[1], ids[2], ids[0]]);
    assert.deepEqual(all.map((e) => [e.status, e.lifecycle, e.outcome]), [
      ["pending", "non-terminal", undefined],
      ["error", "terminal", "success_unverified"],
      ["ok", "terminal", "success_unverified"],
    ]);
    assert.equal(all[0].task, `task of ${ids[1]}`);
    assert.equal(all[0].episode_dir, join(root, "episodes", ids[1]));
    assert.deepEqual(listEpisodes({ root, limit: 2 }).map((e) => e.episode_id), [ids[1], ids[2]]);
    assert.deepEqual(listEpisodes({ root, limit: 0 }), []);
    assert.deepEqual(listEpisodes({ root: join(root, "missing") }), []);
  });

  test("reads only the returned episodes; an unreadable one in range is listed as unreadable", () => {
    const root = fresh("list");
    const older = idOn(1);
    const newer = idOn(5);
    const olderDir = episode(root, older, "ok");
    episode(root, newer, "ok");
    // Make the older episode's state.json unreadable as JSON (tests may run as root, so not by permissions).
    writeFileSync(join(olderDir, "state.json"), "{ not json");

    const one = listEpisodes({ root, limit: 1 });
    assert.deepEqual(one.map((e) => [e.episode_id, e.status]), [[newer, "ok"]]);
    assert.equal(one.some((e) => e.status === "unreadable" || e.error !== undefined), false);

    const two = listEpisodes({ root, limit: 2 });
    assert.deepEqual(two.map((e) => [e.episode_id, e.status]), [[newer, "ok"], [older, "unreadable"]]);
    assert.match(two[1].error!, /state\.json.*invalid JSON/);
    assert.equal(two[1].task, null);
  });

  test("ids that are not ULIDs sort by directory time; unsafe directory names are skipped", () => {
    const root = fresh("list");
    episode(root, "manual-run", "ok");
    mkdirSync(join(root, "episodes", ".hidden"), { recursive: true });
    writeFileSync(join(root, "episodes", "stray-file.txt"), "x");
    const list = listEpisodes({ root });
    assert.deepEqual(list.map((e) => e.episode_id), ["manual-run"]);
  });
});

describe("setting a torn tail aside", () => {
  test("moves the bytes after the offset, data and zeros alike, into events.jsonl.torn-<offset>", async () => {
    const { setAsideTail } = await import("../src/store/set_aside.ts");
    const dir = join(tmp.path, "set-aside", ".noema", "episodes", "ep_torn");
    mkdirSync(dir, { recursive: true });
    const head = Buffer.from('{"id":"e1"}\n');
    // 3 MiB and a bit: a chunk of zeros, data at a chunk's edges, a zero chunk with one byte set at its end.
    const tail = Buffer.alloc(3 * 2 ** 20 + 7);
    tail.write('{"torn":', 0);
    tail[2 ** 20 - 1] = 0x41;
    tail[2 ** 20] = 0x42;
    tail[3 * 2 ** 20 - 1] = 0x43;
    tail[tail.length - 1] = 0x44;
    const path = join(dir, "events.jsonl");
    writeFileSync(path, Buffer.concat([head, tail]));
    const name = setAsideTail(path, head.length);
    assert.equal(name, `events.jsonl.torn-${head.length}`);
    assert.deepEqual(readFileSync(path), head);
    assert.ok(readFileSync(join(dir, name)).equals(tail), "every byte of the tail, zeros included, where it was");
  });
});
