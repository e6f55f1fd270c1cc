/**
 * The `command` adapter feels like running the wrapped program directly:
 * noema's stdin reaches it (a pipe, a pseudo-terminal), its output is shown
 * live on a terminal (on stderr) while still recorded, and its exit code is
 * in the act event and in `noema run --json`. Real child processes: the CLI
 * under the test's runtime, `sh`, and `script` for a pseudo-terminal.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { cli, cliCommand } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-command-");
const root = join(tmp.path, "root");
after(() => tmp.cleanup());

/** The fields of an act payload these tests read. */
interface ActPayload {
  kind?: string;
  exit_code?: number | null;
  result_status?: string;
  output: { argv?: string[]; exit_code?: number | null; stdout?: string; stderr?: string };
}

function actEvents(dir: string): { phase: string; payload: ActPayload }[] {
  return readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l))
    .filter((e) => e.phase === "act");
}

/** The act event of the program (the plan's act step). */
function programAct(dir: string): ActPayload {
  const act = actEvents(dir).find((e) => e.payload.kind === "command" && e.payload.output?.argv);
  assert.ok(act, "an act event for the program");
  return act.payload;
}

const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The arguments of `noema run <task> --json --root <root> --using command -- sh -c <script>`. */
const runSh = (
  task: string,
  script: string,
) => ["run", task, "--json", "--root", root, "--using", "command", "--", "sh", "-c", script];

/** A task file for the command adapter with `adapter` settings; returns its path. */
const commandTask = (name: string, task: string, adapter: Record<string, unknown>) =>
  tmp.file(name, JSON.stringify({ task, using: "command", adapter }));

const EOF_PROBE = 'if read l; then echo "read $l"; else echo eof; fi';
const hasScript = spawnSync("script", ["--version"], { encoding: "utf8" }).status === 0;

describe("command adapter: stdin, exit code", () => {
  test("a pipe on noema's stdin reaches the program; its exit code is in the act event and in run --json", () => {
    const r = cli(runSh("greet", 'read line; echo "got: $line"; exit 7'), {
      input: "hello from stdin\n",
      cwd: tmp.path,
    });
    assert.equal(r.code, 1, r.stderr);
    const res = JSON.parse(r.stdout);
    assert.equal(res.program_exit_code, 7);
    assert.equal(res.error.type, "CommandFailed");
    const act = programAct(res.episode_dir);
    assert.equal(act.exit_code, 7);
    assert.equal(act.output.exit_code, 7);
    assert.equal(act.output.stdout, "got: hello from stdin\n");
    assert.equal(act.result_status, "error");
    assert.doesNotMatch(r.stderr, /got: hello/, "not streamed: stderr is not a terminal");
  });

  test("exit 0: program_exit_code 0 and the run succeeds", () => {
    const r = cli(runSh("ok", "cat"), {
      input: "piped text\n",
      cwd: tmp.path,
    });
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout);
    assert.equal(res.program_exit_code, 0);
    assert.equal(res.status, "ok");
    assert.equal(programAct(res.episode_dir).output.stdout, "piped text\n");
    assert.equal(programAct(res.episode_dir).exit_code, 0);
  });

  test("stdin at /dev/null: the program reads end of file at once (no hang)", () => {
    const [cmd, ...args] = cliCommand();
    const r = spawnSync(
      cmd,
      [...args, ...runSh("x", EOF_PROBE)],
      {
        cwd: tmp.path,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
        timeout: 60_000,
        env: { ...process.env, NO_COLOR: "1" },
      },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.equal(programAct(JSON.parse(r.stdout).episode_dir).output.stdout, "eof\n");
  });

  test('adapter.stdin "none" gives an empty stdin even when data is piped; a bad value is a usage error', () => {
    const task = commandTask("none.json", "no stdin", { command: ["sh", "-c", EOF_PROBE], stdin: "none" });
    const r = cli(["run", task, "--json", "--root", root], { input: "should not be read\n", cwd: tmp.path });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(programAct(JSON.parse(r.stdout).episode_dir).output.stdout, "eof\n");
    const bad = commandTask("bad.json", "bad", { command: ["true"], stdin: "sometimes" });
    const b = cli(["run", bad, "--json", "--root", root], { cwd: tmp.path });
    assert.equal(b.code, 2, b.stderr);
    assert.match(b.stderr, /stdin must be one of auto, inherit, none, got "sometimes"/);
  });

  test("adapter.tee true copies the output to stderr; --json stdout stays one JSON object", () => {
    const task = commandTask("tee.json", "tee", {
      command: ["sh", "-c", "echo to-stdout; echo to-stderr >&2"],
      tee: true,
    });
    const r = cli(["run", task, "--json", "--root", root], { cwd: tmp.path });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /to-stdout/);
    assert.match(r.stderr, /to-stderr/);
    const res = JSON.parse(r.stdout);
    const act = programAct(res.episode_dir);
    assert.equal(act.output.stdout, "to-stdout\n");
    assert.equal(act.output.stderr, "to-stderr\n");
  });
});

describe("command adapter on a terminal (script -qc)", {
  skip: hasScript ? false : "script (util-linux) not found: install it with apt-get install util-linux",
}, () => {
  test("the program reads the terminal, its output is shown live on stderr and recorded", async () => {
    const program = 'if [ -t 0 ]; then echo stdin-is-a-tty; fi; echo first; read line; echo "got $line"; ' +
      "sleep 1; echo second >&2; exit 3";
    const inner = [...cliCommand(), ...runSh("typed", program)].map(q).join(" ");
    const child = spawn("script", ["-qec", inner, "/dev/null"], {
      cwd: tmp.path,
      env: { ...process.env, NO_COLOR: "1", TERM: "dumb" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const t0 = Date.now();
    let text = "";
    const seen: Record<string, number> = {};
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      text += d;
      for (const w of ["first", "got typed words", "second"]) {
        if (!(w in seen) && text.includes(w)) seen[w] = Date.now() - t0;
      }
      if ("first" in seen && !child.stdin!.writableEnded) child.stdin!.write("typed words\n");
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
    clearTimeout(timer);
    const ended = Date.now() - t0;
    const clean = text.replaceAll("\r", "");
    assert.equal(code, 1, clean);
    assert.match(clean, /stdin-is-a-tty/, "the program's stdin is the terminal");
    assert.match(clean, /got typed words/, "what was typed reached the program");
    assert.ok(seen.first !== undefined && seen.second !== undefined, clean);
    assert.ok(ended - seen.first >= 800, `"first" was shown live (${seen.first} ms), not at the end (${ended} ms)`);
    const json = JSON.parse(clean.slice(clean.indexOf("{\n")));
    assert.equal(json.program_exit_code, 3);
    const act = programAct(json.episode_dir);
    assert.equal(act.exit_code, 3);
    assert.equal(act.output.stdout, "stdin-is-a-tty\nfirst\ngot typed words\n");
    assert.equal(act.output.stderr, "second\n");
  });
});
