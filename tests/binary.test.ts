/**
 * The CI smoke test of the single binary: builds `dist/noema` once with
 * `scripts/build.ts` (`bun build --compile`), then uses it from a temp
 * directory outside the repository with plugins copied or generated there:
 * runs (vetoed, exit 3; safe, exit 0), `view --json`, `validate`,
 * `list --json | jq`, `schema`, `init`, plugin load errors, an LLM agent run
 * (`using: "llm"`) against the scripted OpenAI-compatible server and its
 * `--replay` with the server stopped, `install-hooks --shared` whose command
 * then answers a hook call with only the binary on `PATH`, and a hostile
 * working directory (`bunfig.toml` preload, `.env`, `tsconfig.json`,
 * `package.json`) that must not affect it.
 *
 * Skipped as a whole, with a message, only when `bun build --compile` is not
 * available.
 *
 * @module
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { CONTRACT_VERSIONS, NOEMA_VERSION } from "noema";
import { build, bunExecutable, DEFAULT_OUTFILE, WORKERS } from "../scripts/build.ts";
import { tempDir } from "./helpers/tmp.ts";
import { assertOneLineError } from "./helpers/cli.ts";
import { startOpenAiServer } from "./helpers/openai_server.ts";
import { type ChildOptions, runChild } from "./helpers/child.ts";
import { startOtlpReceiver } from "./helpers/otlp_receiver.ts";

const REPO = realpathSync(fileURLToPath(new URL("..", import.meta.url)));

function compileUnavailable(): string | null {
  const r = spawnSync(bunExecutable(), ["build", "--help"], { encoding: "utf8" });
  if (r.error) return `bun is not available (${r.error.message})`;
  return `${r.stdout}${r.stderr}`.includes("--compile") ? null : "this bun has no `bun build --compile`";
}

const SKIP = compileUnavailable();
if (SKIP) process.stderr.write(`tests/binary.test.ts: skipped: ${SKIP}\n`);

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs an executable in `cwd` with a clean environment (no NOEMA_ROOT, no debug). */
function exec(bin: string, args: string[], cwd: string, env: Record<string, string> = {}): Result {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && k !== "NOEMA_ROOT" && k !== "NOEMA_DEBUG") base[k] = v;
  }
  const r = spawnSync(bin, args, {
    cwd,
    encoding: "utf8",
    env: { ...base, NO_COLOR: "1", ...env },
    maxBuffer: 64 << 20,
  });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** {@link exec} without blocking this process (a scripted server here answers the binary). */
function execAsync(bin: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<Result> {
  return execAsyncWith(bin, args, cwd, {}, env);
}

/** {@link execAsync} with {@link runChild}'s options (its pid, its output as it comes). */
function execAsyncWith(
  bin: string,
  args: string[],
  cwd: string,
  options: ChildOptions,
  env: Record<string, string> = {},
): Promise<Result> {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && k !== "NOEMA_ROOT" && k !== "NOEMA_DEBUG") base[k] = v;
  }
  return runChild(bin, args, { ...options, cwd, env: { ...base, NO_COLOR: "1", ...env } });
}

describe("the single binary (dist/noema)", { skip: SKIP ?? false }, () => {
  const tmp = tempDir("noema-binary-");
  const work = join(tmp.path, "work");
  let noema = "";
  let builtBytes = 0;

  // Built while the tests are collected, not in a hook: hooks time out (5 s under bun test) and a build on a loaded
  // machine takes longer.
  if (!SKIP) {
    const result = build({ outfile: DEFAULT_OUTFILE });
    noema = result.outfile;
    builtBytes = result.bytes;
  }

  before(() => {
    mkdirSync(join(work, "guards"), { recursive: true });
    mkdirSync(join(work, "scripts"), { recursive: true });
    // An example policy (imports "noema") and planner copied out of the repository, and a policy with no imports.
    copyFileSync(join(REPO, "plugins", "policies", "sql-guard.ts"), join(work, "guards", "sql-guard.ts"));
    copyFileSync(join(REPO, "plugins", "planners", "checklist.ts"), join(work, "checklist.ts"));
    copyFileSync(join(REPO, "examples", "scripts", "sql-cleanup.jsonc"), join(work, "scripts", "sql-cleanup.jsonc"));
    writeFileSync(
      join(work, "guards", "no-rm.ts"),
      `export default {
  name: "NoRm",
  version: "1.0",
  advise(state: { action: { input: Record<string, unknown> } }) {
    if (String(state.action.input.command ?? "").includes("rm -rf")) return { kind: "veto", advice: "no rm -rf" };
  },
};
`,
    );
    writeFileSync(
      join(work, "sql-vetoed.jsonc"),
      `// like examples/sql-vetoed.jsonc, with the policy copied next to it
{
  "task": "Clean up the staging database",
  "using": "scripted",
  "adapter": { "script": "scripts/sql-cleanup.jsonc" },
  "policies": ["guards/sql-guard.ts"],
  "steps": [
    { "kind": "detect", "description": "Count stale rows", "inputs": { "sql": "SELECT count(*) FROM sessions LIMIT 1" } },
    { "kind": "act", "description": "Drop the sessions table", "inputs": { "sql": "DROP TABLE sessions" } },
    { "kind": "verify", "description": "Check the table is gone", "inputs": { "sql": "SELECT 1 FROM sessions LIMIT 1" } },
  ],
}
`,
    );
    mkdirSync(join(work, "ws"), { recursive: true });
    writeFileSync(
      join(work, "check-version.ts"),
      `import { NOEMA_VERSION } from "noema";
export function evaluate(ctx: { workspace: string | null }) {
  return { passed: typeof NOEMA_VERSION === "string" && ctx.workspace !== null, reason: "no workspace" };
}
`,
    );
    writeFileSync(
      join(work, "safe.jsonc"),
      `{
  "task": "Write a greeting",
  "using": "shell",
  "workspace": "ws",
  "policies": ["guards/sql-guard.ts", "guards/no-rm.ts"],
  "steps": [
    { "kind": "act", "description": "write it", "inputs": { "command": "echo hello > greeting.txt" } },
    { "kind": "verify", "description": "read it", "inputs": { "command": "cat greeting.txt" } },
  ],
  "verify": [
    { "kind": "file_contains", "path": "greeting.txt", "text": "hello" },
    { "kind": "plugin", "path": "check-version.ts" },
  ],
}
`,
    );
  });
  after(() => tmp.cleanup());

  test("the build produced an executable, and the test directory is outside the repository", () => {
    assert.ok(existsSync(noema));
    assert.ok(builtBytes > 1 << 20);
    assert.ok(!realpathSync(work).startsWith(REPO + "/"), `${work} is inside ${REPO}`);
  });

  test("each worker module has a base name of its own (the binary embeds each at /$bunfs/root/<name>)", () => {
    const names = WORKERS.map((w) => basename(w));
    assert.deepEqual([...new Set(names)], names);
    for (const w of WORKERS) assert.ok(existsSync(w), w);
  });

  test("--version prints the version and the contract versions", () => {
    const r = exec(noema, ["--version"], work);
    assert.equal(r.code, 0, r.stderr);
    const v = CONTRACT_VERSIONS;
    assert.match(r.stdout, new RegExp(`^noema ${NOEMA_VERSION.replaceAll(".", "\\.")} `));
    for (const part of [`event ${v.event}`, `state ${v.state}/${v.state_schema}`, `summary ${v.summary}`]) {
      assert.ok(r.stdout.includes(part), `${part} missing from ${r.stdout}`);
    }
  });

  test("a task with the copied sql-guard policy is vetoed: exit 3", () => {
    const r = exec(noema, ["run", "sql-vetoed.jsonc", "--json"], work);
    assert.equal(r.code, 3, r.stderr);
    const out = JSON.parse(r.stdout) as { episode_id: string; status: string };
    assert.equal(out.status, "vetoed");
    const events = readFileSync(join(work, ".noema", "episodes", out.episode_id, "events.jsonl"), "utf8");
    assert.match(events, /SqlGuard@1\.0/);
    assert.match(events, /Destructive SQL blocked/);
  });

  let safeId = "";
  test("a safe shell run with two policies and an assertion plugin that imports noema: exit 0", () => {
    const r = exec(noema, ["run", "safe.jsonc", "--json"], work);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { episode_id: string; status: string; outcome: string };
    assert.equal(out.status, "ok");
    assert.equal(out.outcome, "success");
    assert.equal(readFileSync(join(work, "ws", "greeting.txt"), "utf8"), "hello\n");
    safeId = out.episode_id;
  });

  test("view --json, summary, validate and list --json (through jq when installed)", () => {
    const view = exec(noema, ["view", safeId, "--json"], work);
    assert.equal(view.code, 0, view.stderr);
    const shown = JSON.parse(view.stdout) as { episode_dir?: string };
    assert.equal(realpathSync(String(shown.episode_dir)), realpathSync(join(work, ".noema", "episodes", safeId)));

    const summary = exec(noema, ["summary", safeId], work);
    assert.equal(summary.code, 0, summary.stderr);
    assert.equal((JSON.parse(summary.stdout) as { outcome: string }).outcome, "success");

    const validate = exec(noema, ["validate", safeId], work);
    assert.equal(validate.code, 0, validate.stdout + validate.stderr);

    const list = exec(noema, ["list", "--json"], work);
    assert.equal(list.code, 0, list.stderr);
    const jq = spawnSync("jq", ["-r", ".[].episode_id"], { input: list.stdout, encoding: "utf8" });
    const ids = !jq.error && jq.status === 0
      ? jq.stdout.trim().split("\n")
      : (JSON.parse(list.stdout) as { episode_id: string }[]).map((e) => e.episode_id);
    assert.equal(ids.length, 2);
    assert.ok(ids.includes(safeId));
  });

  test("schema prints the JSON Schemas of schemas/", () => {
    for (const name of ["event", "summary", "task"]) {
      const r = exec(noema, ["schema", name], work);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(
        JSON.parse(r.stdout),
        JSON.parse(readFileSync(join(REPO, "schemas", `${name}.schema.json`), "utf8")),
      );
    }
  });

  test("init writes a policy and an adapter that the binary then runs, with the copied planner", () => {
    const init = exec(noema, ["init", "policy", "house-rules", "--dir", "mine"], work);
    assert.equal(init.code, 0, init.stderr);
    assert.equal(exec(noema, ["init", "adapter", "echo-agent", "--dir", "mine"], work).code, 0);
    const ok = exec(noema, [
      "run",
      "update; then publish",
      "--using",
      "./mine/echo-agent.ts",
      "--policy",
      "mine/house-rules.ts",
      "--planner",
      "checklist.ts",
      "--json",
    ], work);
    assert.equal(ok.code, 0, ok.stderr);
    const id = (JSON.parse(ok.stdout) as { episode_id: string }).episode_id;
    const events = readFileSync(join(work, ".noema", "episodes", id, "events.jsonl"), "utf8");
    assert.match(events, /planner:checklist/);
    assert.match(events, /echo-agent: act step/);
    assert.match(events, /HouseRules@1\.0/);
    assert.equal(exec(noema, ["validate", id], work).code, 0);
  });

  test("plugin load errors are one line naming the file, exit 2; --debug adds the stack", () => {
    writeFileSync(
      join(work, "future.ts"),
      `import { DirectedIntuition } from "noema";
export default class Future extends DirectedIntuition {
  static override api = "2.0";
  advise() {}
}
`,
    );
    writeFileSync(join(work, "not-a-plugin.ts"), "export default 42;\n");
    writeFileSync(join(work, "broken.ts"), "export default { name: 'x', advise( {\n");
    writeFileSync(
      join(work, "throws.ts"),
      'import { DirectedIntuition } from "noema";\n\nconst config = JSON.parse("{");\nexport default config;\n',
    );
    writeFileSync(
      join(work, "planner-v9.ts"),
      "export default { name: 'p', api: '9.1', plan: () => ({ steps: [] }) };\n",
    );
    assertOneLineError(
      exec(noema, ["run", "t", "--policy", "future.ts"], work),
      "future.ts",
      /written for plugin API 2\.0, but this noema provides 1\.0$/,
    );
    assertOneLineError(
      exec(noema, ["run", "t", "--policy", "not-a-plugin.ts"], work),
      "not-a-plugin.ts",
      /does not export a policy/,
    );
    assertOneLineError(exec(noema, ["run", "t", "--policy", "broken.ts"], work), "broken.ts", /syntax error at line 1/);
    assertOneLineError(
      exec(noema, ["run", "t", "--policy", "throws.ts"], work),
      "throws.ts",
      /: cannot load: .* \(at throws\.ts:3:\d+\)$/,
    );
    assertOneLineError(
      exec(noema, ["run", "t", "--policy", "missing.ts"], work),
      "missing.ts",
      /plugin file not found$/,
    );
    assertOneLineError(
      exec(noema, ["run", "t", "--using", "./not-a-plugin.ts"], work),
      "./not-a-plugin.ts",
      /does not export an adapter/,
    );
    assertOneLineError(
      exec(noema, ["run", "t", "--planner", "planner-v9.ts"], work),
      "planner-v9.ts",
      /written for plugin API 9\.1/,
    );
    const debug = exec(noema, ["run", "t", "--policy", "broken.ts", "--debug"], work);
    assert.equal(debug.code, 2);
    assert.ok(debug.stderr.trim().split("\n").length > 1, debug.stderr);
  });

  test("serve answers on 127.0.0.1; a second serve on its port exits 1 (not a second listener); SIGTERM stops it", {
    timeout: 60_000,
  }, async () => {
    let url = "";
    let pid = 0;
    const started = Promise.withResolvers<void>();
    const first = execAsyncWith(noema, ["serve", "--listen", "127.0.0.1:0", "--json"], work, {
      timeoutMs: 50_000,
      onSpawn: (p) => pid = p,
      onStdout: (chunk) => {
        const m = /"url":"([^"]+)"/.exec(chunk);
        if (m) url = m[1], started.resolve();
      },
    });
    void first.then(() => started.reject(new Error("serve ended before it printed its URL")));
    await started.promise;
    try {
      const page = await fetch(`${url}api/episodes`);
      assert.equal(page.status, 200);
      assert.ok(Array.isArray(await page.json()));
      // Killed if it serves on (a second listener on the same port: the bug this guards against).
      const second = await execAsyncWith(noema, ["serve", "--listen", new URL(url).host], work, { timeoutMs: 15_000 });
      assert.equal(second.code, 1, second.stdout + second.stderr);
      assert.match(second.stderr, /^noema: cannot listen on 127\.0\.0\.1:\d+: .*\n$/);
    } finally {
      process.kill(pid, "SIGTERM");
    }
    const stopped = await first;
    assert.equal(stopped.code, 0, stopped.stderr);
  });

  test("install-hooks --shared registers noema from PATH; on a teammate's machine with only the binary it denies", () => {
    const mine = join(tmp.path, "team-mine");
    const theirs = join(tmp.path, "team-theirs");
    const bin = join(tmp.path, "team-bin");
    const deny = `export default { name: "NoLs", version: "1", advise(s) {
  if (String(s.action.command).startsWith("ls")) return { kind: "veto", advice: "no ls here", confidence: 1 };
} };
`;
    for (const dir of [join(mine, "policies"), join(theirs, "policies"), join(theirs, ".claude"), bin]) {
      mkdirSync(dir, { recursive: true });
    }
    writeFileSync(join(mine, "policies", "deny.ts"), deny);
    writeFileSync(join(theirs, "policies", "deny.ts"), deny);
    const args = ["install-hooks", "claude-code", "--shared", "--policy", "policies/deny.ts"];
    const installed = exec(noema, [...args, "--json"], mine);
    assert.equal(installed.code, 0, installed.stderr);
    const command = JSON.parse(installed.stdout).command;
    assert.equal(command, "noema hook claude-code --policy policies/deny.ts || exit 2");
    // Installed again where no noema is on PATH: it says the command would block every call here.
    const noted = exec(noema, args, mine, { PATH: "/usr/bin:/bin" });
    assert.equal(noted.code, 0, noted.stderr);
    assert.match(noted.stdout, /already installed/);
    assert.match(noted.stdout, /runs noema from PATH, and this PATH has none/);
    // The teammate: the committed settings, and the binary on PATH as noema; no Node, no npx, no node_modules.
    writeFileSync(join(theirs, ".claude", "settings.json"), readFileSync(join(mine, ".claude", "settings.json")));
    symlinkSync(noema, join(bin, "noema"));
    const settings = JSON.parse(readFileSync(join(theirs, ".claude", "settings.json"), "utf8"));
    const pre = JSON.parse(readFileSync(join(REPO, "tests", "fixtures", "claude", "PreToolUse_Bash.json"), "utf8"));
    const r = spawnSync("/bin/sh", ["-c", settings.hooks.PreToolUse[0].hooks[0].command], {
      cwd: theirs,
      env: { PATH: bin, HOME: theirs, NOEMA_HOOK_SERVER: "0", NO_COLOR: "1" },
      input: JSON.stringify({ ...pre, cwd: theirs, tool_input: { command: "ls -la" } }),
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout).hookSpecificOutput;
    assert.equal(out.permissionDecision, "deny");
    assert.match(out.permissionDecisionReason, /no ls here/);
  });

  test("using llm: a governed agent run against the scripted server, then --replay with the server stopped", async () => {
    const dir = join(tmp.path, "llm");
    mkdirSync(join(dir, "ws"), { recursive: true });
    copyFileSync(join(work, "guards", "no-rm.ts"), join(dir, "no-rm.ts"));
    const original = "export const greeting = 'hello world';\n";
    writeFileSync(join(dir, "ws", "app.ts"), original);
    const server = await startOpenAiServer([
      {
        tool_calls: [
          { id: "t1", name: "read_file", arguments: '{"path":"app.ts"}' },
          { id: "t2", name: "shell", arguments: '{"command":"rm -rf /"}' },
        ],
      },
      {
        tool_calls: [{
          id: "t3",
          name: "edit_file",
          arguments: '{"path":"app.ts","old_string":"world","new_string":"noema"}',
        }],
      },
      { text: "Done: the greeting says hello noema." },
    ]);
    let id = "";
    try {
      const task = { task: "greet noema", using: "llm", workspace: "ws", policies: ["no-rm.ts"] };
      const adapter = { provider: "openai-compatible", base_url: server.url, model: "scripted", api_key_env: "K" };
      writeFileSync(join(dir, "llm.jsonc"), JSON.stringify({ ...task, adapter }));
      // Asynchronously: the scripted server answers from this process.
      const r = await execAsync(noema, ["run", "llm.jsonc", "--json"], dir, { K: "sk-binary-secret-0042" });
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const out = JSON.parse(r.stdout);
      id = out.episode_id;
      assert.equal(out.blocked.message, "no rm -rf");
      assert.equal(server.requests.length, 3);
      assert.equal(readFileSync(join(dir, "ws", "app.ts"), "utf8"), "export const greeting = 'hello noema';\n");
      const summary = JSON.parse(readFileSync(join(out.episode_dir, "summary.json"), "utf8"));
      const { models, ...tokens } = summary.metrics.tokens;
      assert.deepEqual(tokens, { input: 33, output: 21, total: 54, model_calls: 3, cache_write: 0, cache_read: 0 });
      assert.deepEqual(Object.values(models).map((m) => (m as { model_calls: number }).model_calls), [3]);
      assert.doesNotMatch(readFileSync(join(out.episode_dir, "model.jsonl"), "utf8"), /sk-binary-secret-0042/);
    } finally {
      await server.close();
    }
    writeFileSync(join(dir, "ws", "app.ts"), original);
    const replay = await execAsync(noema, ["run", "--replay", id, "--json"], dir);
    assert.equal(replay.code, 0, replay.stderr + replay.stdout);
    const again = JSON.parse(replay.stdout);
    assert.notEqual(again.episode_id, id);
    assert.equal(again.blocked.message, "no rm -rf");
    assert.equal(readFileSync(join(dir, "ws", "app.ts"), "utf8"), "export const greeting = 'hello noema';\n");
    assert.equal(exec(noema, ["validate", again.episode_dir], dir).code, 0);
  });

  test("--otel: the run's spans go out from the export thread; export otel sends the same trace as JSON", {
    timeout: 60_000,
  }, async () => {
    const live = await startOtlpReceiver();
    const later = await startOtlpReceiver();
    try {
      const r = await execAsync(noema, ["--otel", live.url, "run", "sql-vetoed.jsonc", "--json"], work, {
        NOEMA_OTEL_FLUSH_MS: "60000",
      });
      assert.equal(r.code, 3, r.stderr);
      const id = JSON.parse(r.stdout).episode_id;
      assert.deepEqual(live.spans().map((s) => s.name).sort(), [
        "execute_tool adapter:scripted",
        "execute_tool adapter:scripted",
        "invoke_agent scripted",
      ]);
      const e = await execAsync(
        noema,
        ["export", "otel", id, "--endpoint", later.url, "--protocol", "http/json"],
        work,
      );
      assert.equal(e.code, 0, e.stderr);
      const key = (s: { spanId: string; name: string; status: { code: number } }) =>
        `${s.spanId} ${s.name} ${s.status.code}`;
      assert.deepEqual(later.spans().map(key).sort(), live.spans().map(key).sort());
    } finally {
      await live.close();
      await later.close();
    }
  });

  describe("a hostile working directory", () => {
    const hostile = join(tmp.path, "hostile");
    const marker = join(hostile, "PRELOAD-RAN");
    before(() => {
      mkdirSync(hostile, { recursive: true });
      writeFileSync(
        join(hostile, "evil.ts"),
        `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(marker)}, "pwned");\n`,
      );
      writeFileSync(join(hostile, "bunfig.toml"), `preload = ["./evil.ts"]\n\n[run]\npreload = ["./evil.ts"]\n`);
      writeFileSync(join(hostile, ".env"), `NOEMA_ROOT=${join(hostile, "env-root")}\nNOEMA_DEBUG=1\n`);
      writeFileSync(
        join(hostile, "tsconfig.json"),
        JSON.stringify({ compilerOptions: { paths: { noema: ["./evil.ts"] } } }),
      );
      writeFileSync(
        join(hostile, "package.json"),
        JSON.stringify({ name: "evil", type: "commonjs", imports: { "#x": "./evil.ts" } }),
      );
      copyFileSync(join(REPO, "plugins", "policies", "sql-guard.ts"), join(hostile, "sql-guard.ts"));
    });

    test("neither the preload nor .env, tsconfig.json or package.json take effect", () => {
      const r = exec(noema, ["run", "DROP TABLE users", "--policy", "sql-guard.ts", "--json"], hostile);
      assert.equal(r.code, 3, r.stderr);
      assert.equal(existsSync(marker), false, "bunfig.toml preload ran");
      assert.equal(existsSync(join(hostile, "env-root")), false, ".env was loaded");
      const out = JSON.parse(r.stdout) as { episode_dir: string };
      assert.equal(
        realpathSync(out.episode_dir).startsWith(realpathSync(join(hostile, ".noema"))),
        true,
        out.episode_dir,
      );
      assert.match(readFileSync(join(out.episode_dir, "events.jsonl"), "utf8"), /SqlGuard@1\.0/);
    });

    test("control: the same directory does inject a binary built without the hardening flags", () => {
      const unhardened = build({ outfile: join(tmp.path, "unhardened", "noema"), harden: false, bytecode: false });
      const r = exec(unhardened.outfile, ["run", "hello", "--json"], hostile);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(existsSync(marker), true, "the preload did not run: this test would not detect a regression");
      assert.equal(
        existsSync(join(hostile, "env-root")),
        true,
        ".env was not loaded: this test would not detect a regression",
      );
    });
  });
});
