/**
 * The CLI as a new user meets it (issue 15): each defect found by trying it,
 * and the features users expect (policy test, list filters, `last`, id
 * prefixes, follow, prune). Every test runs the real CLI as a child process
 * on real episodes written by real runs, in temp dirs.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { cli, cliCommand, type CliResult, REPO } from "./helpers/cli.ts";
import { runChild } from "./helpers/child.ts";
import { tempDir } from "./helpers/tmp.ts";
import { EXIT, type NoemaError, run } from "noema";

const tmp = tempDir("noema-cli-ux-");
after(() => tmp.cleanup());

/** A fresh working directory (cwd and root) for one test. */
function workdir(name: string): { cwd: string; root: string; run: (args: string[], input?: string) => CliResult } {
  const cwd = join(tmp.path, name);
  mkdirSync(cwd, { recursive: true });
  const root = join(cwd, ".noema");
  return { cwd, root, run: (args, input) => cli(["--root", root, ...args], { cwd, input }) };
}

const THROWS = `export default {
  name: "Boom",
  version: "1.0",
  advise() {
    throw new Error("kaboom");
  },
};
`;

const SQL_GUARD = join(REPO, "plugins", "policies", "sql-guard.ts");
const APPROVAL_GATE = join(REPO, "plugins", "policies", "approval-gate.ts");

/** The id printed by `run -q`. */
function runQuiet(w: ReturnType<typeof workdir>, args: string[]): string {
  const r = w.run(["run", "-q", ...args]);
  assert.ok(r.code === 0 || r.code === 3 || r.code === 4, `${r.code}: ${r.stderr}`);
  return r.stdout.trim();
}

/** Starts the CLI without waiting for it. */
function start(args: string[], cwd: string): { child: ChildProcess; done: Promise<CliResult> } {
  const [cmd, ...argv] = [...cliCommand(), ...args];
  const env: Record<string, string> = { ...process.env as Record<string, string>, NO_COLOR: "1" };
  delete env.NOEMA_ROOT;
  const child = spawn(cmd, argv, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "", stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const done = new Promise<CliResult>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `check` is true (polling), or fails after `ms`. */
async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const t0 = Date.now();
  while (!check()) {
    if (Date.now() - t0 > ms) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The one episode directory under a root (waits for it). */
function episodeDirs(root: string): string[] {
  const dir = join(root, "episodes");
  return existsSync(dir) ? readdirSync(dir).filter((n) => n.startsWith("ep_")).map((n) => join(dir, n)) : [];
}

// ------------------------------------------------------------------ defects

describe("defect 1: a directory that is not an episode", () => {
  test("view, diff, events, state and plan refuse it, naming the directory, exit 1", () => {
    const w = workdir("not-episode");
    const dir = join(w.cwd, "just-a-dir");
    mkdirSync(dir);
    writeFileSync(join(dir, "notes.txt"), "hello\n");
    for (const cmd of ["view", "diff", "events", "state", "plan", "summary"]) {
      const r = w.run([cmd, dir]);
      assert.equal(r.code, 1, `${cmd}: ${r.stdout}${r.stderr}`);
      assert.equal(
        r.stderr.trim(),
        `noema: not an episode directory: ${dir} (no state.json or events.jsonl)`,
        cmd,
      );
      assert.equal(r.stdout, "", cmd);
    }
  });
});

describe("defect 2: a task file name that does not exist", () => {
  test("ending in .json/.jsonc, or one path-like word: exit 2 'task file not found', nothing run", () => {
    const w = workdir("missing-task");
    for (const arg of ["missing.jsonc", "tasks/missing.json", "./nope/task"]) {
      const r = w.run(["run", arg]);
      assert.equal(r.code, 2, `${arg}: ${r.stderr}`);
      assert.equal(r.stderr.trim(), `noema: ${arg}: task file not found`);
    }
    assert.equal(episodeDirs(w.root).length, 0, "nothing was written");
    // A task that merely mentions a path is still a task.
    assert.equal(w.run(["run", "fix src/app.ts", "-q"]).code, 0);
  });
});

describe("defect 3: noema's own flags after --", () => {
  test("a warning names them; the README's verification example puts them before --", () => {
    const w = workdir("dashes");
    const r = w.run(["run", "make x", "--using", "shell", "--", "sh", "-c", "true", "--verify-file-exists", "x"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stderr,
      /noema: warning: --verify-file-exists after -- goes to the adapter, not to noema; put noema's options before --/,
    );
    const readme = readFileSync(join(REPO, "README.md"), "utf8");
    const block = /## Verification[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)![1];
    const command = block.split("\nnpx noema diff")[0].replace(/\\\n/g, " ").replace(/^mkdir -p ws\s.*\n/, "");
    assert.match(command, /--verify-file-exists/);
    assert.ok(command.lastIndexOf("--verify-") < command.indexOf(" -- "), `--verify-* must come before --: ${command}`);
    // The example, run as written (in a scratch workspace, which it creates first), passes its assertions.
    assert.match(block, /^mkdir -p ws\s/, "the example creates its workspace");
    const ws = join(w.cwd, "ws");
    mkdirSync(ws);
    const args = command.replace(/^npx noema run /, "run --json ").replace("--workspace ws", `--workspace ${ws}`);
    const ran = spawnSync("sh", [
      "-c",
      `${cliCommand().map((a) => `'${a}'`).join(" ")} --root ${w.root} ${args} --json`,
    ], {
      cwd: w.cwd,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1" },
    });
    assert.equal(ran.status, 0, ran.stderr);
    assert.equal(JSON.parse(ran.stdout).outcome, "success");
  });
});

describe("a task file's values refused as the run starts", () => {
  test("are said at their place in the file (file:line: field), exit 2, nothing written", () => {
    // Found by a newcomer run: `"using": "shel"` said only `unknown adapter "shel"`, naming no file or line.
    const w = workdir("task-values");
    const cases: [string, RegExp][] = [
      [
        '{\n  "task": "t",\n  "using": "shel"\n}',
        /^noema: t\.jsonc:3: using: unknown adapter "shel" \(did you mean "shell"\?\)/,
      ],
      [
        '{\n  "task": "t",\n  "policies": ["nope.ts"]\n}',
        /^noema: t\.jsonc:3: policies\[0\]: \S*nope\.ts: plugin file not found/,
      ],
      [
        '{\n  "task": "t",\n  "workspace": "nope"\n}',
        /^noema: t\.jsonc:3: workspace: workspace .*nope: no such directory/,
      ],
    ];
    for (const [text, message] of cases) {
      writeFileSync(join(w.cwd, "t.jsonc"), text);
      const r = w.run(["run", "t.jsonc"]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, message);
    }
    assert.equal(episodeDirs(w.root).length, 0, "nothing was written");
  });
});

describe("words after the task without --", () => {
  test("are a usage error naming them and the quoted task (exit 2), nothing run or written; after -- they run", () => {
    // Found by a newcomer run: `noema run Say hello --using shell` recorded the task "Say" and ran `hello`.
    const w = workdir("unquoted");
    const r = w.run(["run", "Say", "hello", "--using", "shell"]);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(
      r.stderr.trim(),
      `noema: the task is one argument, and "hello" came after it without --: quote the whole task ("Say hello"), ` +
        "or put the adapter's arguments after -- (see 'noema run --help')",
    );
    assert.equal(episodeDirs(w.root).length, 0, "nothing was written");
    assert.equal(w.run(["run", "Say", "-q", "--using", "shell", "--", "echo", "hello"]).code, 0);
    // No task at all: the help says how to give one (found by the same run: the hint was missing).
    const none = w.run(["run"]);
    assert.equal(none.code, 2);
    assert.equal(
      none.stderr.trim(),
      "noema: missing the task (or give --replay or --continue EPISODE) (see 'noema run --help')",
    );
  });
});

describe("issue 23.11: a --workspace that is not a directory", () => {
  test("is a usage error naming it (exit 2), and nothing is written", () => {
    const w = workdir("missing-workspace");
    const r = w.run(["run", "make x", "--using", "shell", "--workspace", "no/such/ws", "--", "sh", "-c", "true"]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^noema: workspace no\/such\/ws: no such directory.* \(see 'noema run --help'\)$/m);
    assert.doesNotMatch(r.stderr, /ENOENT|SpawnError|posix_spawn/);
    writeFileSync(join(w.cwd, "a-file"), "");
    const f = w.run(["run", "make x", "--using", "shell", "--workspace", "a-file", "--", "sh", "-c", "true"]);
    assert.equal(f.code, 2, f.stderr);
    assert.match(f.stderr, /^noema: workspace a-file: is not a directory/m);
    // A task file's workspace (relative to the file) is checked the same way.
    writeFileSync(join(w.cwd, "t.jsonc"), `{"task": "x", "using": "shell", "workspace": "gone"}`);
    const t = w.run(["run", "t.jsonc", "--", "true"]);
    assert.equal(t.code, 2, t.stderr);
    assert.match(t.stderr, /workspace .*gone: no such directory/);
    assert.equal(episodeDirs(w.root).length, 0, "nothing was written");
  });
});

describe("issue 23.13: a list whose filters match nothing", () => {
  test("says none of the episodes match and names the filters, in every format", () => {
    const w = workdir("empty-filters");
    runQuiet(w, ["hello", "--tag", "team=web"]);
    const table = w.run(["list", "--status", "vetoed", "--tag", "team=infra"]);
    assert.equal(table.code, 0, table.stderr);
    assert.equal(table.stdout, "");
    assert.match(
      table.stderr,
      /^noema: none of the 1 episode in .*episodes matches the filters: --status vetoed --tag team=infra$/m,
    );
    assert.doesNotMatch(table.stderr, /no episodes in/);
    const json = w.run(["list", "--task", "deploy", "--json"]);
    assert.deepEqual(JSON.parse(json.stdout), []);
    assert.match(json.stderr, /none of the 1 episode .* matches the filters: --task "deploy"/);
    const quiet = w.run(["list", "--since", "2000-01-01", "--status", "error", "-q"]);
    assert.equal(quiet.stdout, "");
    assert.match(quiet.stderr, /matches the filters: --status error --since 2000-01-01/);
    // No episodes at all: it says that, filters or not.
    const none = workdir("empty-root").run(["list", "--status", "vetoed"]);
    assert.match(none.stderr, /^noema: no episodes in /m);
  });
});

describe("issue 24.13: values that were accepted, then misbehaved", () => {
  test("a task-file path that is a FIFO is a usage error naming it, not a task (never opened)", () => {
    const w = workdir("fifo-task");
    const fifo = join(w.cwd, "task.fifo");
    execFileSync("mkfifo", [fifo]);
    const r = w.run(["run", fifo]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^noema: .*task\.fifo: not a task file: it is a FIFO, not a regular file$/m);
    assert.equal(episodeDirs(w.root).length, 0, "nothing was written");
  });

  test("the library refuses a policy_timeout_ms a timer cannot wait (2^31 ms), writing nothing", async () => {
    const root = join(tmp.path, "lib-timeout", ".noema");
    await assert.rejects(
      run("hello", { root, policy_timeout_ms: 2 ** 31 }),
      (e: NoemaError) =>
        e.exitCode === 2 && /policy_timeout_ms must be an integer from 1 to 2147483647/.test(e.message),
    );
    assert.equal(episodeDirs(root).length, 0);
  });
});

describe("issue 24.11: bad input that gave an internal error", () => {
  test("--root (or NOEMA_ROOT) that is a file, or below one, is a usage error naming it", () => {
    const w = workdir("root-file");
    writeFileSync(join(w.cwd, "afile"), "");
    for (
      const args of [["--root", "afile", "list"], ["--root", "afile", "run", "hello"], [
        "view",
        "last",
        "--root",
        "afile",
      ]]
    ) {
      const r = cli(args, { cwd: w.cwd });
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(
        r.stderr,
        /^noema: --root afile: cannot use it as the episodes root: it is not a directory \(see 'noema [a-z]+ --help'\)$/m,
      );
      assert.doesNotMatch(r.stderr, /ENOTDIR|internal error/);
    }
    const below = cli(["--root", "afile/sub/.noema", "run", "hello"], { cwd: w.cwd });
    assert.equal(below.code, 2, below.stderr);
    assert.match(
      below.stderr,
      /--root afile\/sub\/.noema: cannot use it as the episodes root: .*afile is not a directory/,
    );
    const env = cli(["list"], { cwd: w.cwd, env: { NOEMA_ROOT: "afile" } });
    assert.equal(env.code, 2, env.stderr);
    assert.match(env.stderr, /^noema: NOEMA_ROOT afile: cannot use it as the episodes root/m);
    // noema.jsonc's root too.
    writeFileSync(join(w.cwd, "noema.jsonc"), '{ "root": "afile" }');
    const config = cli(["run", "hello"], { cwd: w.cwd });
    assert.equal(config.code, 2, config.stderr);
    assert.match(config.stderr, /^noema: noema\.jsonc root .*afile: cannot use it as the episodes root: it is not a/m);
    rmSync(join(w.cwd, "noema.jsonc"));
    // A root that does not exist yet is fine (a run creates it).
    assert.equal(cli(["--root", "fresh/.noema", "list"], { cwd: w.cwd }).code, 0);
  });

  test("hook input nested 200,000 levels deep is refused with a located error (exit 2), no stack overflow", () => {
    const w = workdir("deep-hook");
    const depth = 200_000;
    const event = `{"session_id":"s-deep","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"t1",` +
      `"transcript_path":"/tmp/none","cwd":${JSON.stringify(w.cwd)},"tool_input":{"command":` +
      `${"[".repeat(depth)}${"]".repeat(depth)}}}`;
    const r = cli(["--root", w.root, "hook", "claude-code"], {
      cwd: w.cwd,
      input: event,
      env: { NOEMA_HOOK_SERVER: "0" },
    });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /stdin:1: JSON nested deeper than 256 levels/);
    assert.doesNotMatch(r.stderr, /call stack|RangeError|internal error/i);
  });
});

describe("issue 23.14: the --using names agree everywhere", () => {
  test("the error's list (with did-you-mean), --help and both README tables name every built-in, claude-code too", () => {
    const w = workdir("using-names");
    const r = w.run(["run", "hello", "--using", "claud-code"]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /unknown adapter "claud-code" \(did you mean "claude-code"\?\)/);
    const names = /use one of (.*) or a path/.exec(r.stderr)![1].split(", ");
    assert.deepEqual([...names].sort(), ["claude-code", "command", "llm", "minimal", "scripted", "shell"]);
    const help = w.run(["run", "--help"]).stdout.replace(/\s+/g, " ");
    const readme = readFileSync(join(REPO, "README.md"), "utf8");
    const flagRow = readme.split("\n").find((l) => l.startsWith("| `--using ADAPTER`"))!;
    const adapters = /## Adapters\n([\s\S]*?)\n\n/.exec(readme)![1];
    for (const name of names) {
      assert.ok(help.includes(name), `run --help names ${name}`);
      assert.ok(flagRow.includes(`\`${name}\``), `the README's --using row names ${name}: ${flagRow}`);
      assert.ok(adapters.includes(`| \`${name}\` |`), `the README's Adapters table has a row for ${name}`);
    }
  });
});

describe("issue 23.14: noema's own outputs in the checkout do not break `npm run check`", () => {
  test("deno fmt --check and deno lint with the repo's deno.json skip .noema/ and report pages", () => {
    const w = workdir("fmt-outputs");
    writeFileSync(join(w.cwd, "deno.json"), readFileSync(join(REPO, "deno.json")));
    writeFileSync(join(w.cwd, "ok.ts"), "export const ok = 1;\n");
    runQuiet(w, ["hello"]);
    const page = w.run(["report", "last"]);
    assert.equal(page.code, 0, page.stderr);
    assert.ok(readdirSync(w.cwd).some((n) => n.endsWith(".html")), "the report page is in the directory");
    mkdirSync(join(w.cwd, "sub", ".noema"), { recursive: true });
    writeFileSync(join(w.cwd, "sub", ".noema", "x.json"), '{"a":   1}');
    const deno = join(REPO, "node_modules", ".bin", "deno");
    for (const args of [["fmt", "--check"], ["lint"]]) {
      const r = spawnSync(deno, args, { cwd: w.cwd, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
      assert.equal(r.status, 0, `deno ${args.join(" ")}: ${r.stdout}${r.stderr}`);
    }
  });
});

describe("defect 4: a policies/ folder in the current directory", () => {
  const VETO_ALL =
    `export default { name: "VetoAll", version: "1.0", advise: () => ({ kind: "veto", advice: "no", confidence: 1 }) };\n`;

  test("is not loaded without policies_dir in noema.jsonc, and stderr says so", () => {
    const w = workdir("policies-folder");
    mkdirSync(join(w.cwd, "policies"));
    writeFileSync(join(w.cwd, "policies", "veto-all.ts"), VETO_ALL);
    writeFileSync(
      join(w.cwd, "policies", "marker.ts"),
      `import { writeFileSync } from "node:fs";
writeFileSync(${JSON.stringify(join(w.cwd, "executed"))}, "yes");
export default { name: "Marker", advise: () => undefined };
`,
    );
    const r = w.run(["run", "hello", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).status, "ok");
    assert.ok(!existsSync(join(w.cwd, "executed")), "no file of ./policies/ was imported");
    assert.match(r.stderr, /noema: not loading 2 files in \.\/policies\/: .*"policies_dir": "policies"/);
  });

  test("with policies_dir it is loaded, and each file is named on stderr", () => {
    const w = workdir("policies-opt-in");
    mkdirSync(join(w.cwd, "policies"));
    writeFileSync(join(w.cwd, "policies", "veto-all.ts"), VETO_ALL);
    writeFileSync(join(w.cwd, "noema.jsonc"), `{ "policies_dir": "policies" }\n`);
    const r = w.run(["run", "hello", "--json"]);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /noema: noema\.jsonc loads policy policies\/veto-all\.ts/);
    writeFileSync(join(w.cwd, "noema.jsonc"), `{ "policies_dir": "nowhere" }\n`);
    const bad = w.run(["run", "hello"]);
    assert.equal(bad.code, 2);
    assert.match(
      bad.stderr,
      /noema\.jsonc: policies_dir: policies_dir: folder not found: nowhere|policies_dir.*folder not found/,
    );
  });
});

describe("defect 5: policy errors", () => {
  test("two syntax errors: the first one's line and column", () => {
    const w = workdir("syntax");
    writeFileSync(
      join(w.cwd, "bad.ts"),
      'export default {\n  name: "X",\n  advise( { return 1 +; },\n};\nconst = ;\n',
    );
    const r = w.run(["run", "hi", "--policy", "bad.ts"]);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.match(r.stderr, /^noema: bad\.ts: syntax error at line 3, column \d+: /);
  });

  test("a policy that throws: 'policy failed' with its error, apart from vetoes, in run, --json and view", () => {
    const w = workdir("throws");
    writeFileSync(join(w.cwd, "boom.ts"), THROWS);
    const r = w.run(["run", "hi", "--policy", "boom.ts"]);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stdout, /policy failed Boom@1\.0: Error: kaboom.*\(not a veto\)/);
    assert.doesNotMatch(r.stdout, /vetoed by/);
    const j = JSON.parse(w.run(["run", "hi", "--policy", "boom.ts", "--json"]).stdout);
    assert.equal(j.blocked.kind, "policy_failure");
    assert.equal(j.blocked.rule, "policy.failure:Boom@1.0");
    assert.deepEqual({ type: j.blocked.error.type, message: j.blocked.error.message }, {
      type: "Error",
      message: "kaboom",
    });
    const view = w.run(["view", j.episode_id]);
    assert.match(view.stdout, /0 vetoes · 1 policy failure/);
    assert.match(view.stdout, /direction\s+step-1\s+Boom@1\.0\s+failure\s+blocked\s+policy failed: Error: kaboom/);
    assert.match(view.stdout, /governance\s+step-1\s+policy\.failure:Boom@1\.0\s+veto \(policy failure\)/);
    const vj = JSON.parse(w.run(["view", j.episode_id, "--json"]).stdout);
    assert.equal(vj.counts.vetoes, 0);
    assert.equal(vj.counts.policy_failures, 1);
    // The run's final message (the terminate event's), in --json and the view's header; no "Answer" (not an agent).
    assert.match(j.message, /^Action blocked: policy Boom@1\.0 failed /, "a failure is not called a veto");
    assert.equal(vj.message, j.message);
    assert.match(view.stdout, /^ {2}message +Action blocked: /m);
    assert.doesNotMatch(view.stdout, /^Answer$/m);

    // Where it was thrown (error.at of the direction event, file:line:column) in run output, --json and view.
    assert.match(r.stdout, /policy failed Boom@1\.0: Error: kaboom \(at boom\.ts:5:\d+\)/);
    assert.match(j.blocked.error.at, /^boom\.ts:5:\d+$/);
    assert.match(view.stdout, /policy failed: Error: kaboom \(at boom\.ts:5:\d+\)/);
  });

  test("a real veto says who vetoed and why, in run output and --json", () => {
    const w = workdir("real-veto");
    const r = w.run(["run", join(REPO, "examples", "sql-vetoed.jsonc")]);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stdout, /vetoed by SqlGuard@1\.0: Destructive SQL blocked/);
    const j = JSON.parse(w.run(["run", join(REPO, "examples", "sql-vetoed.jsonc"), "--json"]).stdout);
    assert.equal(j.exit_code, 3);
    assert.equal(j.blocked.kind, "veto");
    assert.match(j.blocked.message, /Destructive SQL blocked/);
    assert.equal(j.blocked.error, null);
    // Plural: one veto is "1 veto".
    assert.match(w.run(["view", j.episode_id]).stdout, /· 1 veto$/m);
  });
});

describe("defect 6: running, crashed, waiting for approval", () => {
  test("a live run is 'running' with its elapsed time; killed, it is 'crashed'", async () => {
    const w = workdir("live");
    const { child, done } = start(["--root", w.root, "run", "wait", "--using", "shell", "--", "sleep", "30"], w.cwd);
    try {
      await until(() => episodeDirs(w.root).some((d) => existsSync(join(d, "lock"))), "the run's lock");
      await sleep(1100);
      const list = w.run(["list"]);
      assert.match(list.stdout, /ep_\w+\s+running \d+s\s+-\s+wait/, list.stdout);
      const view = w.run(["view", "last"]);
      assert.match(view.stdout, /^Episode ep_\w+ {2}running \d+s/m);
      assert.match(view.stdout, /running: no summary\.json yet/);
      assert.equal(JSON.parse(w.run(["list", "--json"]).stdout)[0].run_state, "running");
    } finally {
      child.kill("SIGKILL");
    }
    await done;
    const list = w.run(["list"]);
    assert.match(list.stdout, /ep_\w+\s+crashed\s+-\s+wait/, list.stdout);
    assert.match(
      w.run(["view", "last"]).stdout,
      /crashed \(no live process, no checkpoint; noema resume recovers it\)/,
    );
    assert.equal(JSON.parse(w.run(["list", "--json", "--status", "crashed"]).stdout).length, 1);
  });

  test("a paused run is 'waiting for approval'; finished runs show their status", () => {
    const w = workdir("paused");
    const r = w.run(["run", "deploy", "--policy", APPROVAL_GATE, "--using", "shell", "--", "echo", "deploy"]);
    assert.equal(r.code, 4, r.stderr);
    runQuiet(w, ["hello"]);
    const rows = w.run(["list"]).stdout.split("\n");
    assert.match(rows[1], /\s+ok\s+success_unverified\s+hello/);
    assert.match(rows[2], /\s+waiting for approval\s+-\s+deploy/);
  });
});

describe("defect 7: the package bin with only Node on PATH", () => {
  test("bin/noema.mjs finds the bundled Bun and runs the CLI from any directory; cwd's bunfig/.env are ignored", () => {
    const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8"));
    assert.equal(pkg.bin.noema, "bin/noema.mjs");
    const node = spawnSync("sh", ["-c", "command -v node"], { encoding: "utf8" }).stdout.trim();
    if (!node) {
      // Node is part of the development setup (npm); without it there is nothing to launch the bin with.
      assert.fail("node is not on PATH: the launcher test needs Node");
    }
    const w = workdir("launcher");
    const onlyNode = join(w.cwd, "bin-only-node");
    mkdirSync(onlyNode);
    symlinkSync(node, join(onlyNode, "node"));
    // A hostile directory: a bunfig.toml preloading code, and a .env.
    writeFileSync(
      join(w.cwd, "evil.ts"),
      `require("node:fs").writeFileSync(${JSON.stringify(join(w.cwd, "pwned"))}, "1");\n`,
    );
    writeFileSync(join(w.cwd, "bunfig.toml"), `preload = ["./evil.ts"]\n`);
    writeFileSync(join(w.cwd, ".env"), "NOEMA_ROOT=/tmp/should-not-be-used-by-noema\n");
    const launcher = join(REPO, "bin", "noema.mjs");
    const env = { PATH: onlyNode, HOME: w.cwd, NO_COLOR: "1" };
    const ver = spawnSync(launcher, ["--version"], { cwd: w.cwd, env, encoding: "utf8" });
    assert.equal(ver.status, 0, ver.stderr);
    assert.match(ver.stdout, /^noema \d+\.\d+\.\d+ \(contracts:/);
    const ran = spawnSync(launcher, ["run", "hello", "--json"], { cwd: w.cwd, env, encoding: "utf8" });
    assert.equal(ran.status, 0, ran.stderr);
    assert.ok(JSON.parse(ran.stdout).episode_dir.startsWith(join(w.cwd, ".noema")), "the .env was not read");
    const vetoed = spawnSync(launcher, ["run", join(REPO, "examples", "sql-vetoed.jsonc")], {
      cwd: w.cwd,
      env,
      encoding: "utf8",
    });
    assert.equal(vetoed.status, 3, "the exit code passes through");
    assert.match(vetoed.stdout, /view: noema view ep_/, "a plain call: the next command says noema");
    // Under npx (npm sets npm_command=exec), the commands noema prints to type next say npx noema (found by a
    // newcomer run: `noema view …` is not on the PATH of someone who installed with npm ci).
    const npx = spawnSync(launcher, ["run", "hello"], {
      cwd: w.cwd,
      env: { ...env, npm_command: "exec" },
      encoding: "utf8",
    });
    assert.equal(npx.status, 0, npx.stderr);
    assert.match(npx.stdout, /view: npx noema view ep_/);
    // And the dashboard of a waiting run says how to decide it the same way (its twin of run's `decide:` line).
    writeFileSync(join(w.cwd, "review.json"), JSON.stringify({ task: "look first", steps: ["review:check it"] }));
    const held = spawnSync(launcher, ["run", "review.json", "-q"], { cwd: w.cwd, env, encoding: "utf8" });
    assert.equal(held.status, 4, held.stderr);
    const viewed = spawnSync(launcher, ["view", held.stdout.trim()], {
      cwd: w.cwd,
      env: { ...env, npm_command: "exec" },
      encoding: "utf8",
    });
    assert.match(
      viewed.stdout,
      /decide: npx noema approve ep_\S+ --checkpoint chk_\S+ --resume {2}\| {2}npx noema reject ep_/,
    );
    // An error that names the command to type next names it the same way (the runtime's own messages said noema).
    const early = spawnSync(launcher, ["resume", held.stdout.trim()], {
      cwd: w.cwd,
      env: { ...env, npm_command: "exec" },
      encoding: "utf8",
    });
    assert.equal(early.status, EXIT.NO_CHECKPOINT, early.stderr);
    assert.match(
      early.stderr,
      /has no decision yet: run npx noema approve ep_\S+ --checkpoint chk_\S+ or npx noema reject ep_\S+ --checkpoint chk_/,
    );
    assert.ok(!existsSync(join(w.cwd, "pwned")), "the bunfig.toml of the working directory was not read");
    const missing = spawnSync(node, [launcher, "--version"], {
      cwd: w.cwd,
      env: { ...env, NOEMA_BUN: join(w.cwd, "no-bun-here") },
      encoding: "utf8",
    });
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /cannot find the Bun runtime/);
  });
});

describe("defect 8: init's Next lines", () => {
  test("each suggested command works in a directory outside the repository", () => {
    const w = workdir("init-next");
    const shim = join(w.cwd, "shim");
    mkdirSync(shim);
    writeFileSync(
      join(shim, "noema"),
      `#!/bin/sh\nexec ${cliCommand().map((a) => `'${a}'`).join(" ")} --root '${w.root}' "$@"\n`,
    );
    chmodSync(join(shim, "noema"), 0o755);
    for (const kind of ["policy", "adapter"]) {
      const r = cli(["init", kind, `my-${kind}`], { cwd: w.cwd });
      assert.equal(r.code, 0, r.stderr);
      const next = r.stdout.split("Next:\n")[1].split("\n").filter((l) => l.trim().startsWith("noema "));
      assert.ok(next.length >= 1, r.stdout);
      for (const line of next) {
        const command = line.trim().replace(/\s+#.*$/, "");
        const ran = spawnSync("sh", ["-c", command], {
          cwd: w.cwd,
          encoding: "utf8",
          env: { ...process.env, PATH: `${shim}:${process.env.PATH}`, NO_COLOR: "1" },
        });
        const ok = command.startsWith("noema policy test") ? ran.status === 3 : ran.status === 0;
        assert.ok(ok, `${command} exited ${ran.status}: ${ran.stderr}`);
      }
      assert.doesNotMatch(r.stdout, /^\s+bun test/m, "no bun test line where 'noema' does not resolve");
      assert.match(
        r.stdout,
        /imports "noema": run it with bun test or deno test -A where the noema package is installed/,
      );
    }
  });
});

describe("defect 9: smaller ones", () => {
  let w: ReturnType<typeof workdir>;
  let vetoed: string;
  before(() => {
    w = workdir("small");
    vetoed = runQuiet(w, [join(REPO, "examples", "sql-vetoed.jsonc")]);
  });

  test("events --phase: unknown is a usage error listing the phases; repeatable and comma-separated", () => {
    const bad = w.run(["events", vetoed, "--phase", "bogus"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown phase "bogus" \(known: start, observe, interpret, plan, direction, governance/);
    const phases = (args: string[]) =>
      new Set(w.run(["events", vetoed, ...args, "--json"]).stdout.trim().split("\n").map((l) => JSON.parse(l).phase));
    assert.deepEqual(phases(["--phase", "direction", "--phase", "governance"]), new Set(["direction", "governance"]));
    assert.deepEqual(phases(["-p", "start,terminate"]), new Set(["start", "terminate"]));
  });

  test("Ctrl-C stops the run and exits 130", async () => {
    const x = workdir("sigint");
    const { child, done } = start(["--root", x.root, "run", "wait", "--using", "shell", "--", "sleep", "30"], x.cwd);
    await until(() => episodeDirs(x.root).some((d) => existsSync(join(d, "lock"))), "the run's lock");
    await sleep(300);
    // process.kill, not child.kill: Deno's child_process reports a child it signalled itself as killed by the signal.
    process.kill(child.pid!, "SIGINT");
    const r = await done;
    assert.equal(r.code, 130, r.stderr);
    assert.equal(JSON.parse(x.run(["list", "--json"]).stdout)[0].status, "aborted");
  });

  test("approve without --by records the OS user name", () => {
    const x = workdir("approve-by");
    const r = x.run(["run", "deploy", "--policy", APPROVAL_GATE, "--using", "shell", "--", "echo", "deploy"]);
    assert.equal(r.code, 4, r.stderr);
    const approved = cli(["--root", x.root, "approve", "last", "--json"], {
      cwd: x.cwd,
      env: { USER: undefined, LOGNAME: undefined, USERNAME: undefined },
    });
    assert.equal(approved.code, 0, approved.stderr);
    // The account's name (`id -un` reads it from the uid), also where $USER is unset and Bun's os.userInfo() says "unknown".
    assert.equal(JSON.parse(approved.stdout).by, execFileSync("id", ["-un"], { encoding: "utf8" }).trim());
  });

  test("--help shows no docs/ path a binary user lacks, and names noema help <command>", () => {
    const r = cli(["--help"]);
    assert.equal(r.code, 0);
    assert.doesNotMatch(r.stdout, /docs\/cli\.md/);
    assert.match(r.stdout, /noema help <command>/);
    assert.match(cli(["help", "prune"]).stdout, /--older-than/);
  });
});

describe("escapes and intuition mode", () => {
  test("terminal escape sequences from a task or an output are neutralised in list, view, plan and events", () => {
    const w = workdir("escapes");
    const task = "clean \x1b]0;pwned\x07up \x1b[2J\x9b31m now \u202e";
    const id = runQuiet(w, [task, "--using", "shell", "--", "printf", "\\033[31mred\\033]0;t\\007"]);
    let list = "";
    for (const args of [["list"], ["view", id], ["plan", id], ["events", id], ["last"]]) {
      const r = w.run(args);
      assert.equal(r.code, 0, `${args}: ${r.stderr}`);
      assert.ok(
        // deno-lint-ignore no-control-regex
        !/[\x1b\x07\x9b\u202e]/.test(r.stdout),
        `${args[0]} printed a control character: ${JSON.stringify(r.stdout)}`,
      );
      if (args[0] === "list") list = r.stdout;
    }
    assert.match(list, /clean \\x1b\]0;pwned\\x07up \\x1b\[2J\\x9b31m now \\u\{202e\}/);
    // --json keeps the recorded text exactly (JSON escapes it).
    assert.equal(JSON.parse(w.run(["list", "--json"]).stdout)[0].task, task);
  });

  test("view: a state without episode.intuition_mode is advisory, whatever the start event says", () => {
    const w = workdir("intuition");
    const id = runQuiet(w, ["hello"]);
    const statePath = join(w.root, "episodes", id, "state.json");
    const state = JSON.parse(readFileSync(statePath, "utf8"));
    assert.equal(state.episode.intuition_mode, "interventive");
    assert.match(w.run(["view", id]).stdout, /intuition\s+interventive/);
    delete state.episode.intuition_mode;
    writeFileSync(statePath, JSON.stringify(state));
    assert.match(w.run(["view", id]).stdout, /intuition\s+advisory/);
  });
});

// ------------------------------------------------------------------ features

describe("noema policy test", () => {
  test("prints the verdict and the decision as JSON; exit 3 vetoed, 0 allowed; nothing is executed", () => {
    const w = workdir("policy-test");
    const marker = join(w.cwd, "marker");
    const veto = w.run(["policy", "test", SQL_GUARD, "--action", '{"sql": "DROP TABLE users"}']);
    assert.equal(veto.code, 3, veto.stderr);
    const v = JSON.parse(veto.stdout);
    assert.equal(v.result, "vetoed");
    assert.equal(v.verdicts[0].policy, "SqlGuard@1.0");
    assert.equal(v.verdicts[0].kind, "veto");
    assert.match(v.verdicts[0].advice, /DROP/);
    assert.equal(v.decision.decision, "veto");
    assert.equal(v.decision.rule, "policy.veto:SqlGuard@1.0");

    const allow = w.run(["policy", "test", SQL_GUARD, "--command", `touch ${marker}`]);
    assert.equal(allow.code, 0, allow.stderr);
    const a = JSON.parse(allow.stdout);
    assert.equal(a.result, "allowed");
    assert.deepEqual(a.action, { kind: "shell", tool: "adapter:shell", input: { command: `touch ${marker}` } });
    assert.equal(a.decision.decision, "allow");
    assert.ok(!existsSync(marker), "the command was not run");
    assert.ok(!existsSync(w.root), "no episode left behind");
  });

  test("an intervention's patch, a policy failure (exit 1) and an approval request (exit 4)", () => {
    const w = workdir("policy-test-2");
    const init = cli(["init", "policy", "no-force-push"], { cwd: w.cwd });
    assert.equal(init.code, 0, init.stderr);
    const patch = w.run(["policy", "test", "no-force-push.ts", "--command", "git push origin main --force"]);
    assert.equal(patch.code, 0, patch.stderr);
    const p = JSON.parse(patch.stdout);
    assert.equal(p.verdicts[0].kind, "intervention");
    assert.deepEqual(p.verdicts[0].patch, { command: "git push origin main --force-with-lease", argv: null });

    writeFileSync(join(w.cwd, "boom.ts"), THROWS);
    const failed = w.run(["policy", "test", "boom.ts", "--task", "anything"]);
    assert.equal(failed.code, 1, failed.stderr);
    const f = JSON.parse(failed.stdout);
    assert.equal(f.result, "failed");
    assert.equal(f.verdicts[0].error.message, "kaboom");

    const gate = w.run(["policy", "test", APPROVAL_GATE, "--command", "deploy prod"]);
    assert.equal(gate.code, 4, gate.stderr);
    assert.equal(JSON.parse(gate.stdout).result, "needs_approval");

    const usage = w.run(["policy", "test", SQL_GUARD, "--action", "{not json"]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--action: invalid JSON/);
  });
});

describe("list filters, last and id prefixes", () => {
  let w: ReturnType<typeof workdir>;
  let ids: string[];
  before(() => {
    w = workdir("filters");
    ids = [
      runQuiet(w, ["deploy the api", "--tag", "team=infra"]),
      runQuiet(w, [join(REPO, "examples", "sql-vetoed.jsonc"), "--tag", "team=data"]),
      runQuiet(w, ["deploy the web", "--tag", "team=infra", "--tag", "env=prod"]),
    ];
  });
  const listed = (args: string[]) =>
    JSON.parse(w.run(["list", "--json", ...args]).stdout).map((e: { episode_id: string }) => e.episode_id);

  test("--status, --tag, --task, --since combine, then --limit applies", () => {
    assert.deepEqual(listed(["--status", "vetoed"]), [ids[1]]);
    assert.deepEqual(listed(["--status", "ok,vetoed", "-n", "2"]), [ids[2], ids[1]]);
    assert.deepEqual(listed(["--tag", "team=infra"]), [ids[2], ids[0]]);
    assert.deepEqual(listed(["--tag", "team=infra", "--tag", "env=prod"]), [ids[2]]);
    assert.deepEqual(listed(["--task", "DEPLOY", "--limit", "1"]), [ids[2]]);
    assert.deepEqual(listed(["--since", "1h", "--status", "ok"]), [ids[2], ids[0]]);
    assert.deepEqual(listed(["--since", "2999-01-01"]), []);
    const bad = w.run(["list", "--since", "yesterday"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--since must be a date/);
    assert.equal(w.run(["list", "--status", "happy"]).code, 2);
  });

  test("last, and a unique prefix, wherever an id goes; an ambiguous prefix lists the candidates (exit 2)", () => {
    assert.equal(w.run(["last"]).stdout.trim(), ids[2]);
    assert.equal(JSON.parse(w.run(["state", "last"]).stdout).episode.id, ids[2]);
    assert.match(w.run(["view", "last"]).stdout, new RegExp(`^Episode ${ids[2]}`));
    // The shortest prefix that tells ids[0] apart from the others.
    let n = 4;
    while (ids.filter((id) => id.startsWith(ids[0].slice(0, n))).length > 1) n++;
    const prefix = ids[0].slice(0, n);
    assert.match(w.run(["view", prefix]).stdout, new RegExp(`^Episode ${ids[0]}`));
    assert.equal(JSON.parse(w.run(["summary", prefix.slice(3).toLowerCase()]).stdout).episode_id, ids[0]);
    assert.equal(w.run(["validate", prefix]).code, 0);
    const amb = w.run(["view", "ep_"]);
    assert.equal(amb.code, 2);
    assert.match(amb.stderr, /episode prefix "ep_" is ambiguous: 3 episodes match \(ep_/);
    for (const id of ids) assert.ok(amb.stderr.includes(id));
    const empty = workdir("no-episodes");
    assert.equal(empty.run(["last"]).code, 1);
  });

  test("verify and report take last and a unique prefix too", () => {
    const verified = w.run(["verify", "last", "--json"]);
    assert.equal(verified.code, 0, verified.stderr);
    assert.equal(JSON.parse(verified.stdout).manifest, join(w.root, "episodes", ids[2], "manifest.json"));
    let n = 4;
    while (ids.filter((id) => id.startsWith(ids[1].slice(0, n))).length > 1) n++;
    const prefix = ids[1].slice(0, n);
    const byPrefix = w.run(["verify", prefix.slice(3).toLowerCase(), "--json"]);
    assert.equal(byPrefix.code, 0, byPrefix.stderr);
    assert.equal(JSON.parse(byPrefix.stdout).manifest, join(w.root, "episodes", ids[1], "manifest.json"));
    assert.equal(w.run(["verify", "ep_"]).code, 2, "an ambiguous prefix is a usage error");
    const report = w.run(["report", prefix]);
    assert.equal(report.code, 0, report.stderr);
    const page = readFileSync(join(w.cwd, `${ids[1]}.html`), "utf8");
    assert.ok(page.includes(ids[1]), "the page of the episode the prefix names");
    const last = w.run(["report", "last", "-o", "-"]);
    assert.equal(last.code, 0, last.stderr);
    assert.ok(last.stdout.includes(ids[2]));
  });
});

describe("follow", () => {
  test("events --follow prints NDJSON as written and exits 0 at the end; view --follow prints the final dashboard", async () => {
    const w = workdir("follow");
    const run = start(["--root", w.root, "run", "slow", "--using", "shell", "--", "sleep", "1.5"], w.cwd);
    await until(() => episodeDirs(w.root).length > 0, "the episode");
    const events = start(["--root", w.root, "events", "last", "--follow", "--json"], w.cwd);
    const view = start(["--root", w.root, "view", "last", "--follow"], w.cwd);
    const [r, e, v] = await Promise.all([run.done, events.done, view.done]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(e.code, 0, e.stderr);
    const dir = episodeDirs(w.root)[0];
    assert.equal(e.stdout, readFileSync(join(dir, "events.jsonl"), "utf8"), "every event, exactly as stored");
    assert.equal(v.code, 0, v.stderr);
    assert.match(v.stdout, /^Episode ep_\w+ {2}ok · success_unverified/);
  });

  test("events --follow on a finished log longer than its read chunk prints every line as stored", () => {
    const w = workdir("follow-long");
    const id = runQuiet(w, ["hello"]);
    const events = join(w.root, "episodes", id, "events.jsonl");
    const lines = readFileSync(events, "utf8").split("\n").filter(Boolean);
    const filler = JSON.parse(lines[lines.length - 1]);
    filler.payload = { note: "x".repeat(600) };
    const extra = Array.from({ length: 9000 }, (_, i) => JSON.stringify({ ...filler, id: `ev_fill_${i}` }) + "\n");
    writeFileSync(events, lines.join("\n") + "\n" + extra.join(""));
    const r = w.run(["events", id, "--follow", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.length > 5_000_000);
    assert.equal(r.stdout, readFileSync(events, "utf8"));
  });

  const hasScript = spawnSync("sh", ["-c", "command -v script"], { encoding: "utf8" }).stdout.trim() !== "";
  test(
    "view --follow on a terminal redraws the dashboard as the run goes, and ends with it finished",
    { skip: hasScript ? false : "needs util-linux 'script' for a pseudo-terminal (apt-get install bsdutils)" },
    async () => {
      const w = workdir("follow-tty");
      // The run's step waits for a file the test creates once the viewer has drawn it running (not for a time).
      const gate = "while [ ! -e go ]; do sleep 0.05; done";
      const run = start(["--root", w.root, "run", "slow", "--using", "shell", "--", "sh", "-c", gate], w.cwd);
      await until(() => episodeDirs(w.root).length > 0, "the episode");
      const quote = (a: string) => `'${a.replaceAll("'", "'\\''")}'`;
      const command = [...cliCommand(), "--root", w.root, "view", "last", "--follow"].map(quote).join(" ");
      let screen = "";
      const viewed = runChild("script", ["-qec", command, "/dev/null"], {
        cwd: w.cwd,
        env: { ...process.env, NO_COLOR: "1", COLUMNS: "120" },
        timeoutMs: 180_000, // only catches a hang
        onStdout: (d) => (screen += d),
      });
      try {
        await until(() => /Episode ep_\w+ {2}running/.test(screen), "a frame of the run running", 120_000);
      } finally {
        writeFileSync(join(w.cwd, "go"), ""); // the run ends, and the viewer with it
      }
      assert.equal((await run.done).code, 0);
      const tty = await viewed;
      assert.equal(tty.code, 0, tty.stderr);
      const frames = tty.stdout.split("\x1b[H\x1b[2J").filter((f) => f.includes("Episode "));
      assert.ok(frames.length >= 2, `expected redraws, got ${frames.length} frame(s)`);
      assert.match(frames[0], /Episode ep_\w+ {2}running/);
      assert.match(frames.at(-1)!, /Episode ep_\w+ {2}ok · success_unverified/);
    },
  );

  test("follow stops at a pause (exit 0) and refuses a crashed run (exit 1)", async () => {
    const w = workdir("follow-pause");
    const r = w.run(["run", "deploy", "--policy", APPROVAL_GATE, "--using", "shell", "--", "echo", "deploy"]);
    assert.equal(r.code, 4);
    const e = await start(["--root", w.root, "events", "last", "--follow", "-p", "runtime"], w.cwd).done;
    assert.equal(e.code, 0, e.stderr);
    assert.match(e.stdout.trim().split("\n").at(-1)!, /runtime\s+run\.checkpoint/);
    assert.match(e.stderr, /paused, waiting for approval/);

    const x = workdir("follow-crash");
    const { child, done } = start(["--root", x.root, "run", "wait", "--using", "shell", "--", "sleep", "30"], x.cwd);
    await until(() => episodeDirs(x.root).some((d) => existsSync(join(d, "lock"))), "the run's lock");
    child.kill("SIGKILL");
    await done;
    const c = await start(["--root", x.root, "events", "last", "--follow"], x.cwd).done;
    assert.equal(c.code, 1);
    assert.match(c.stderr, /no live process writes it/);
  });
});

describe("noema prune", () => {
  test("--older-than removes old episodes (printing them), --dry-run removes nothing, a running one is kept", () => {
    const w = workdir("prune");
    const [oldOk, oldVetoed, fresh, oldRunning] = [
      runQuiet(w, ["old one"]),
      runQuiet(w, [join(REPO, "examples", "sql-vetoed.jsonc")]),
      runQuiet(w, ["fresh"]),
      runQuiet(w, ["old but running"]),
    ];
    const age = (id: string) => {
      const p = join(w.root, "episodes", id, "state.json");
      const s = JSON.parse(readFileSync(p, "utf8"));
      s.episode.started_at = "2020-01-01T00:00:00.000Z";
      writeFileSync(p, JSON.stringify(s));
    };
    for (const id of [oldOk, oldVetoed, oldRunning]) age(id);
    // A live process (this test) holds the lock of oldRunning, and it has no summary: it is running.
    const dir = join(w.root, "episodes", oldRunning);
    rmSync(join(dir, "summary.json"));
    writeFileSync(
      join(dir, "lock"),
      JSON.stringify({ pid: process.pid, host: hostname(), started_at: new Date().toISOString(), purpose: "run" }),
    );

    const dry = w.run(["prune", "--older-than", "30d", "--dry-run"]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, new RegExp(`would remove  ${oldOk}`));
    assert.match(dry.stdout, new RegExp(`would remove  ${oldVetoed}`));
    assert.match(dry.stderr, new RegExp(`kept ${oldRunning}: running`));
    // What stays is counted by why (found by a newcomer run: "0 kept" while newer episodes stayed).
    assert.match(
      dry.stderr,
      /2 episodes would be removed; kept: 1 not older than 30d, 1 older but to be kept \(above\)/,
    );
    assert.equal(episodeDirs(w.root).length, 4);

    const only = JSON.parse(w.run(["prune", "--older-than", "30d", "--status", "vetoed", "--json"]).stdout);
    assert.deepEqual(only.removed.map((r: { episode_id: string }) => r.episode_id), [oldVetoed]);
    assert.ok(!existsSync(join(w.root, "episodes", oldVetoed)));

    const all = w.run(["prune", "--older-than", "30d"]);
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, new RegExp(`removed  ${oldOk}`));
    assert.deepEqual(episodeDirs(w.root).map((d) => d.split("/").at(-1)).sort(), [fresh, oldRunning].sort());
    assert.equal(w.run(["prune", "--older-than", "soon"]).code, 2);
    assert.equal(w.run(["prune"]).code, 2, "--older-than is required");
    assert.ok(existsSync(dirname(dir)));
  });
});

describe("newcomer audit", () => {
  test("an unknown key in a step (any nested strict object) says unknown key, with a did-you-mean; nothing written", () => {
    const w = workdir("audit-step-key");
    writeFileSync(
      join(w.cwd, "t.jsonc"),
      '{\n  "task": "x",\n  "using": "shell",\n  "steps": [\n    { "kind": "act", "description": "d", "input": "ls" },\n' +
        '    { "kind": "act", "description": "e", "zzzzzzzz": 1 }\n  ]\n}\n',
    );
    const r = w.run(["run", "t.jsonc"]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /t\.jsonc:5: steps\[0\]\.input: unknown key \(did you mean "inputs"\?\)\n/);
    assert.doesNotMatch(r.stderr, /never/);
    assert.ok(!existsSync(w.root), "nothing written");
    writeFileSync(
      join(w.cwd, "u.jsonc"),
      '{ "task": "x", "steps": [{ "kind": "act", "description": "e", "zzzzzzzz": 1 }] }',
    );
    assert.match(
      w.run(["run", "u.jsonc"]).stderr,
      /u\.jsonc:1: steps\[0\]\.zzzzzzzz: unknown key; known keys: id, kind, description, rationale, inputs\n/,
    );
  });

  test("an assertion's or a step input's wrong value is said at its file, line and field, with a did-you-mean", () => {
    // Found by two break-it runs: these said the field without its line (or a misleading "has no inputs.command").
    const w = workdir("audit-located");
    const file = (name: string, text: string) => writeFileSync(join(w.cwd, name), text);
    file("tv.jsonc", '{\n  "task": "t",\n  "verify": [\n    { "kind": "file_exist", "path": "x" }\n  ]\n}\n');
    file(
      "f1.jsonc",
      '{\n  "task": "t",\n  "using": "shell",\n  "steps": [\n    { "kind": "act", "description": "x", "inputs": { "command": 5 } }\n  ]\n}\n',
    );
    file(
      "f2.jsonc",
      '{ "task": "t", "using": "shell",\n  "steps": [{ "kind": "act", "description": "x", "inputs": { "argv": "echo" } }] }\n',
    );
    file("vf.jsonc", '[\n  { "kind": "file_exists", "path": "a" },\n  { "kind": "file_contains", "path": "a" }\n]\n');
    const cases: [string[], RegExp][] = [
      [
        ["run", "tv.jsonc"],
        /^noema: tv\.jsonc:4: verify\[0\]\.kind: unknown assertion kind "file_exist" \(did you mean "file_exists"\? expected one of: /,
      ],
      [
        ["run", "f1.jsonc"],
        /^noema: f1\.jsonc:5: steps\[0\]\.inputs\.command: adapter shell: step step-1: the shell command must be a string, got number/,
      ],
      [
        ["run", "f2.jsonc"],
        /^noema: f2\.jsonc:2: steps\[0\]\.inputs\.argv: adapter shell: step step-1: argv must be a list of strings/,
      ],
      [["run", "v", "--verify-file", "vf.jsonc"], /^noema: vf\.jsonc:3: \[1\]\.text: required field is missing/],
    ];
    for (const [args, want] of cases) {
      const r = w.run(args);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, want);
      assert.ok(!existsSync(w.root), `${args.join(" ")}: nothing written`);
    }
  });

  test("validate of a run killed while sealing says resume completes it, as list and view do", () => {
    // Found by a break-it run: validate listed lifecycle problems without the way out.
    const w = workdir("audit-sealing");
    const id = w.run(["run", "hello", "-q"]).stdout.trim();
    const dir = join(w.root, "episodes", id);
    rmSync(join(dir, "summary.json"));
    rmSync(join(dir, "manifest.json"));
    const r = w.run(["validate", id]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`episode ${id} crashed while sealing .*: noema resume ${id} completes them`));
    assert.equal(w.run(["resume", id]).code, 0);
    assert.equal(w.run(["validate", id]).code, 0);
  });

  test("the hook's bad input reads like every other input error (exit 2: Claude Code's block)", () => {
    const w = workdir("audit-hook-input");
    const hook = (event: unknown) =>
      cli(["--root", w.root, "hook", "claude-code"], {
        cwd: w.cwd,
        input: JSON.stringify(event),
        env: { NOEMA_HOOK_SERVER: "0" },
      });
    const empty = hook({});
    assert.equal(empty.code, 2, empty.stderr);
    assert.equal(empty.stderr, "noema: stdin: claude-code hook event: hook_event_name: required field is missing\n");
    const pre = { session_id: "s", hook_event_name: "PreToolUse", tool_name: "Bash", tool_input: { command: "ls" } };
    const noId = hook({ ...pre, cwd: w.cwd });
    assert.equal(noId.code, 2, noId.stderr);
    assert.equal(noId.stderr, "noema: stdin: claude-code PreToolUse: tool_use_id: required field is missing\n");
    assert.match(hook({ ...pre, cwd: w.cwd, tool_use_id: 5 }).stderr, /tool_use_id: expected string, got number\n$/);
  });

  test("a typo in the shell or command adapter's settings is a usage error naming file:line and key; nothing written", () => {
    const w = workdir("audit-adapter-keys");
    const task = (using: string, adapter: string) =>
      writeFileSync(
        join(w.cwd, "t.jsonc"),
        `{\n  "task": "x",\n  "using": "${using}",\n  "adapter": {\n    ${adapter}\n  },\n` +
          '  "steps": [{ "kind": "act", "description": "d", "inputs": { "command": "echo hi" } }]\n}\n',
      );
    task("shell", '"timeout_ms": 5000, "env_alow": ["X"]');
    const shell = w.run(["run", "t.jsonc"]);
    assert.equal(shell.code, 2, shell.stderr);
    assert.match(
      shell.stderr,
      /t\.jsonc:5: adapter\.env_alow: unknown key for the shell adapter \(did you mean "env_allow"\?\)\n/,
    );
    task("command", '"command": ["true"], "timout_ms": 5');
    const command = w.run(["run", "t.jsonc"]);
    assert.equal(command.code, 2, command.stderr);
    assert.match(command.stderr, /t\.jsonc:5: adapter\.timout_ms: unknown key .*\(did you mean "timeout_ms"\?\)\n/);
    assert.ok(!existsSync(w.root), "nothing written");
    task("shell", '"timeout_ms": 5000, "env_allow": ["PATH"], "env": { "A": "1" }, "act_timeout_ms": 9000');
    assert.equal(w.run(["run", "t.jsonc", "-q"]).code, 0, "the documented keys run");
  });

  test("a timeout no timer can wait (over 2^31 - 1 ms, under 1) is a usage error naming file:line and key, not a step killed at once", () => {
    const w = workdir("audit-adapter-timeouts");
    const task = (using: string, adapter: string, inputs = '"command": "echo hi"') =>
      writeFileSync(
        join(w.cwd, "t.jsonc"),
        `{\n  "task": "x",\n  "using": "${using}",\n  "adapter": {\n    ${adapter}\n  },\n` +
          `  "steps": [{ "kind": "act", "description": "d", "inputs": { ${inputs} } }]\n}\n`,
      );
    const cases: [string, string, RegExp][] = [
      ["shell", '"timeout_ms": 3000000000', /t\.jsonc:5: adapter\.timeout_ms: must be an integer from 1 to 2147483647/],
      ["shell", '"timeout_ms": -5', /t\.jsonc:5: adapter\.timeout_ms: must be an integer from 1 to 2147483647/],
      ["command", '"command": ["true"], "timeout_ms": 0', /adapter\.timeout_ms: must be an integer from 1/],
      [
        "shell",
        '"act_timeout_ms": 1e12',
        /t\.jsonc:5: adapter\.act_timeout_ms: must be an integer from 1 to 2147483647/,
      ],
      ["shell", '"excerpt_bytes": -1', /t\.jsonc:5: adapter\.excerpt_bytes: must be an integer from 0 to 16777216/],
    ];
    for (const [using, adapter, message] of cases) {
      task(using, adapter);
      const r = w.run(["run", "t.jsonc"]);
      assert.equal(r.code, 2, `${adapter}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.ok(!existsSync(w.root), "nothing written");
    }
    task("shell", '"timeout_ms": 5000', '"command": "echo hi", "timeout_ms": 3000000000');
    const step = w.run(["run", "t.jsonc"]);
    assert.equal(step.code, 2, step.stderr);
    assert.match(step.stderr, /step step-1: inputs\.timeout_ms must be an integer from 1 to 2147483647/);
    assert.ok(!existsSync(w.root), "nothing written");
    for (
      const [text, message] of [
        [
          '{ "task": "x", "verify": [{ "kind": "command_succeeds", "command": "true", "timeout_ms": 3000000000 }] }',
          /verify\[0\]\.timeout_ms: must be at most 2147483647 \(the longest a timer waits\)/,
        ],
        [
          '{ "task": "x", "using": "llm", "adapter": { "model": "openai:m", "shell": { "timeout_ms": 3000000000 } } }',
          /adapter\.shell\.timeout_ms: must be at most 2147483647 \(the longest a timer waits\)/,
        ],
      ] as const
    ) {
      writeFileSync(join(w.cwd, "t.jsonc"), text);
      const r = w.run(["run", "t.jsonc"]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, message);
      assert.ok(!existsSync(w.root), "nothing written");
    }
    task(
      "shell",
      '"timeout_ms": 2147483647, "act_timeout_ms": 2147483647',
      '"command": "echo hi", "timeout_ms": 60000',
    );
    assert.equal(w.run(["run", "t.jsonc", "-q"]).code, 0, "the longest timer runs");
  });

  test("a number too large to be one (1e400 reads as Infinity) is a usage error naming file:line and field", () => {
    const w = workdir("audit-huge-number");
    for (
      const [text, field] of [
        ['{\n  "task": "x",\n  "tags": { "k": 1e400 }\n}\n', "3: tags.k"],
        [
          '{\n  "task": "x",\n  "steps": [{ "kind": "act", "description": "d",\n    "inputs": { "n": [1, -1E+400] } }]\n}\n',
          "4: steps[0].inputs.n[1]",
        ],
        [`{\n  "task": "x",\n  "seed": ${"9".repeat(400)}\n}\n`, "3: seed"],
      ]
    ) {
      writeFileSync(join(w.cwd, "t.jsonc"), text);
      const r = w.run(["run", "t.jsonc"]);
      assert.equal(r.code, 2, r.stderr);
      assert.ok(r.stderr.includes(`t.jsonc:${field}: the number `), r.stderr);
      assert.match(r.stderr, /is too large for a JSON value \(it reads as Infinity/);
      assert.ok(!existsSync(w.root), "nothing written, no half-made episode");
    }
    writeFileSync(join(w.cwd, "t.jsonc"), '{ "task": "x", "tags": { "big": 1e300, "tiny": 1e-400 } }');
    assert.equal(w.run(["run", "t.jsonc", "-q"]).code, 0, "large and tiny numbers that are numbers run");
  });

  test("a tag named __proto__, constructor or prototype is refused (it would vanish unchecked), in a file and as --tag", () => {
    const w = workdir("audit-proto-tag");
    for (const name of ["__proto__", "constructor", "prototype"]) {
      writeFileSync(join(w.cwd, "t.jsonc"), `{ "task": "x", "tags": { "${name}": { "polluted": "yes" }, "ok": "1" } }`);
      const file = w.run(["run", "t.jsonc"]);
      assert.equal(file.code, 2, file.stderr);
      assert.ok(file.stderr.includes(`t.jsonc:1: tags: "${name}" cannot be a tag name`), file.stderr);
      const flag = w.run(["run", "x", "--tag", `${name}=v`]);
      assert.equal(flag.code, 2, flag.stderr);
      assert.ok(flag.stderr.includes(`--tag: "${name}" cannot be a tag name`), flag.stderr);
    }
    assert.ok(!existsSync(w.root), "nothing written");
  });

  test("a task file's missing field is a usage error naming the line of the object it is missing from", () => {
    const w = workdir("audit-missing-field");
    writeFileSync(
      join(w.cwd, "t.jsonc"),
      '{\n  "task": "x",\n  "steps": [\n    { "kind": "act", "descriptio": "d" }\n  ]\n}\n',
    );
    const r = w.run(["run", "t.jsonc"]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /t\.jsonc:4: steps\[0\]\.description: required field is missing\n/);
    assert.ok(!existsSync(w.root), "nothing written");
  });

  test("--using shell with nothing to run is a usage error before anything is written, as --using command is", () => {
    const w = workdir("audit-shell-no-command");
    let shell = "";
    for (const using of ["shell", "command"]) {
      const r = w.run(["run", "x", "--using", using]);
      assert.equal(r.code, 2, `${using}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`^noema: adapter ${using}: .*noema run "<task>" --using ${using} -- <`));
      if (using === "shell") shell = r.stderr;
    }
    assert.match(shell, /step step-2 has no inputs\.command or inputs\.argv/);
    writeFileSync(join(w.cwd, "t.jsonc"), '{ "task": "x", "using": "shell", "steps": ["detect:look", "act:do it"] }');
    assert.match(w.run(["run", "t.jsonc"]).stderr, /adapter shell: step step-2 has no inputs\.command/);
    assert.ok(!existsSync(w.root), "nothing written");
    assert.equal(w.run(["run", "t.jsonc", "-q", "--", "true"]).code, 0, "the command after -- is the step's");
  });
});
