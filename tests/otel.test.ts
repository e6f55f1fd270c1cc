/**
 * OpenTelemetry GenAI export, end to end through the CLI, against the
 * scripted OTLP/HTTP receiver (`tests/helpers/otlp_receiver.ts`, which
 * decodes protobuf and JSON as the OTLP specification defines them):
 *
 * - a run exported live (`--otel URL`, protobuf) gives one trace whose tree
 *   matches the episode: the `invoke_agent` root, one `execute_tool` span per
 *   act step with its verdict, the vetoed call with an ERROR status and the
 *   veto's reason; `noema export otel` after the fact (JSON, and `--file`)
 *   gives the same spans, ids included;
 * - an llm episode (the scripted model server) has a `chat` span per model
 *   turn with its tokens, live and after the fact alike;
 * - a receiver that is down, slow beyond the timeout, answering 503 with
 *   Retry-After, or rejecting with 400: the run ends as without export, the
 *   warning is said once and recorded as a `runtime` event, and the export
 *   after the fact delivers the episode.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import process from "node:process";
import { spanIdOf, traceIdOf } from "../src/export/otel/ids.ts";
import { type ChildResult, runChild } from "./helpers/child.ts";
import { cliCommand, REPO } from "./helpers/cli.ts";
import { startOpenAiServer } from "./helpers/openai_server.ts";
import { decodeJsonRequest, type ReceivedSpan, startOtlpReceiver } from "./helpers/otlp_receiver.ts";
import { REFUSED_PORT } from "./helpers/local_http.ts";
import { tempDir } from "./helpers/tmp.ts";
import { pidsWithEnv } from "./helpers/processes.ts";
import { osUserName } from "../src/runtime/os_user.ts";

const tmp = tempDir("noema-otel-");
after(() => tmp.cleanup());
const root = join(tmp.path, "root");
/** Each test runs several CLI processes: generous, not a measure of speed. */
const T = { timeout: 120_000 };

/** The environment of a child: no OTEL_* of the caller's, plus `extra`. */
function envWith(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith("OTEL_") && !k.startsWith("NOEMA_")) env[k] = v;
  }
  // The end of a run waits for its export (not the 5% of its time it waits by default, then handing over).
  return { ...env, NO_COLOR: "1", NOEMA_OTEL_FLUSH_MS: "60000", ...extra };
}

/** A file's text, or "" while it is not there (a directory being renamed into place). */
function textIfThere(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return "";
    throw e;
  }
}

/** `noema ARGS` (stderr to `errFile` when given: a step of the run can then read it). */
function noema(args: string[], extra: Record<string, string> = {}, errFile?: string): Promise<ChildResult> {
  const argv = [...cliCommand(), "--root", root, ...args];
  if (errFile === undefined) {
    return runChild(argv[0], argv.slice(1), { cwd: REPO, env: envWith(extra), timeoutMs: 90_000 });
  }
  return runChild("sh", ["-c", `exec "$@" 2>"${errFile}"`, "sh", ...argv], {
    cwd: REPO,
    env: envWith(extra),
    timeoutMs: 90_000,
  });
}

function events(dir: string): { id: string; phase: string; event_type?: string; payload: Record<string, unknown> }[] {
  return readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
}

/** The spans of one trace, as comparable JSON, keyed and ordered by span id. */
function comparable(spans: ReceivedSpan[]): string {
  const sorted = [...spans].sort((a, b) => a.spanId.localeCompare(b.spanId));
  return JSON.stringify(sorted, (_k, v) => typeof v === "bigint" ? v.toString() : v);
}

/** Checks the tree of an episode's trace against its events; returns the spans by kind. */
function checkTree(spans: ReceivedSpan[], id: string, dir: string) {
  const trace = traceIdOf(id);
  assert.deepEqual([...new Set(spans.map((s) => s.traceId))], [trace], "one trace per episode");
  const roots = spans.filter((s) => s.parentSpanId === "");
  assert.equal(roots.length, 1, "one root");
  const root = roots[0];
  assert.equal(root.spanId, spanIdOf(id, "root"));
  assert.match(root.name, /^invoke_agent /);
  assert.equal(root.attributes["gen_ai.operation.name"], "invoke_agent");
  assert.equal(root.attributes["noema.episode.id"], id);
  assert.equal(root.attributes["noema.episode.dir"], dir);
  for (const s of spans) if (s !== root) assert.equal(s.parentSpanId, root.spanId, `${s.name}: a child of the root`);
  const all = events(dir), acts = all.filter((e) => e.phase === "act");
  const callIds = new Map(
    all.filter((e) => e.phase === "action_candidate").map((
      e,
    ) => [e.payload.action_candidate_id, (e.payload.payload as { call_id?: string }).call_id]),
  );
  const tools = spans.filter((s) => s.name.startsWith("execute_tool "));
  assert.equal(tools.length, acts.length, "one tool span per act step");
  for (const a of acts) {
    const t = tools.find((s) => s.spanId === spanIdOf(id, a.id));
    assert.ok(t, `a span for ${a.id}`);
    assert.equal(t.attributes["gen_ai.tool.name"], a.payload.tool);
    assert.equal(t.attributes["noema.step.id"], a.payload.step_id);
    assert.ok(typeof t.attributes["noema.governance.decision"] === "string", "the verdict is on the span");
    assert.equal(
      t.attributes["gen_ai.tool.call.id"],
      (a.payload.provenance as { call_id?: string } | undefined)?.call_id ??
        callIds.get(a.payload.action_candidate_id) ?? a.payload.action_id,
    );
  }
  return { root, tools, chats: spans.filter((s) => s.name.startsWith("chat ")) };
}

describe("noema export otel", () => {
  it("exports a vetoed run live (protobuf), and the same trace after the fact (JSON, --file)", T, async () => {
    const live = await startOtlpReceiver();
    const later = await startOtlpReceiver();
    try {
      const r = await noema(["--otel", live.url, "run", join(REPO, "examples", "sql-vetoed.jsonc"), "--json"]);
      assert.equal(r.code, 3, r.stderr);
      const out = JSON.parse(r.stdout);
      const { root: rootSpan, tools } = checkTree(live.spans(), out.episode_id, out.episode_dir);
      assert.ok(live.requests.every((q) => q.contentType.startsWith("application/x-protobuf")), "protobuf by default");
      assert.equal(rootSpan.status.code, 2, "a vetoed run: ERROR");
      const vetoed = tools.filter((t) => t.status.code === 2);
      assert.equal(vetoed.length, 1, "one vetoed call");
      assert.match(vetoed[0].status.message, /Destructive SQL blocked/);
      assert.equal(vetoed[0].attributes["noema.policy.id"], "SqlGuard@1.0");
      assert.equal(vetoed[0].attributes["noema.policy.verdict"], "veto");
      assert.equal(vetoed[0].attributes["noema.governance.decision"], "veto");
      assert.ok(
        vetoed[0].events.some((e) =>
          e.name === "noema.policy.verdict" && e.attributes["noema.policy.verdict"] === "veto"
        ),
      );
      assert.ok(!comparable(live.spans()).includes("guardrail"), "verdicts are not called guardrails");
      assert.ok(!comparable(live.spans()).includes("DROP TABLE"), "no content by default");
      assert.equal(rootSpan.resource["service.name"], "noema");

      const e = await noema([
        "export",
        "otel",
        out.episode_id,
        "--endpoint",
        later.url,
        "--protocol",
        "http/json",
        "--json",
      ]);
      assert.equal(e.code, 0, e.stderr);
      assert.deepEqual(JSON.parse(e.stdout).episodes, [{
        episode_id: out.episode_id,
        trace_id: traceIdOf(out.episode_id),
        spans: live.spans().length,
      }]);
      assert.ok(later.requests.every((q) => q.contentType.startsWith("application/json")));
      assert.equal(comparable(later.spans()), comparable(live.spans()), "the same trace live and after the fact");

      const file = join(tmp.path, "out.json");
      const f = await noema(["export", "otel", out.episode_id, "--file", file]);
      assert.equal(f.code, 0, f.stderr);
      assert.equal(comparable(decodeJsonRequest(JSON.parse(readFileSync(file, "utf8")))), comparable(live.spans()));
      const grpc = join(tmp.path, "grpc.json");
      const fileProto = await noema(["export", "otel", out.episode_id, "--file", grpc, "--protocol", "grpc"]);
      assert.equal(fileProto.code, 2, "--protocol is checked with --file too");
      assert.match(fileProto.stderr, /--protocol: grpc/);
      assert.equal(existsSync(grpc), false, "nothing written");

      const c = await noema([
        "export",
        "otel",
        out.episode_id,
        "--file",
        join(tmp.path, "c.json"),
        "--capture-content",
      ]);
      assert.equal(c.code, 0, c.stderr);
      assert.match(readFileSync(join(tmp.path, "c.json"), "utf8"), /DROP TABLE sessions/, "content on opt-in");
    } finally {
      await live.close();
      await later.close();
    }
  });

  it("exports an llm episode with a chat span per model turn and its tokens, live and after the fact", T, async () => {
    const model = await startOpenAiServer([
      { tool_calls: [{ id: "t1", name: "shell", arguments: '{"command":"echo hi"}' }] },
      { tool_calls: [{ id: "t2", name: "shell", arguments: '{"command":"rm -rf build"}' }] },
      { text: "done", usage: { prompt_tokens: 40, completion_tokens: 3 } },
    ]);
    const live = await startOtlpReceiver();
    const later = await startOtlpReceiver();
    const ws = join(tmp.path, "ws");
    const policy = tmp.file(
      "no-rm.ts",
      `export default { name: "NoRm", version: "1.0", advise(s) {
        if (String(s.action.input.command ?? "").includes("rm -rf")) return { kind: "veto", advice: "no rm -rf here" };
      } };\n`,
    );
    try {
      await import("node:fs").then((fs) => fs.mkdirSync(ws, { recursive: true }));
      const r = await noema(
        [
          ...["run", "Say hi", "--model", "openai-compatible:m", "--base-url", model.url, "--workspace", ws],
          ...["--policy", policy, "--json"],
        ],
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: live.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
          OTEL_SERVICE_NAME: "agents",
          OTEL_EXPORTER_OTLP_HEADERS: "x-team=governed,authorization=Basic dGVzdA==",
          OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test",
        },
      );
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const out = JSON.parse(r.stdout);
      const { root: rootSpan, tools, chats } = checkTree(live.spans(), out.episode_id, out.episode_dir);
      assert.equal(rootSpan.resource["service.name"], "agents", "OTEL_SERVICE_NAME");
      assert.equal(rootSpan.resource["deployment.environment"], "test", "OTEL_RESOURCE_ATTRIBUTES");
      for (const q of live.requests) {
        assert.equal(q.headers["x-team"], "governed", "OTEL_EXPORTER_OTLP_HEADERS");
        assert.equal(q.headers.authorization, "Basic dGVzdA==");
      }
      assert.equal(chats.length, 3, "a chat span per model turn");
      assert.deepEqual(chats.map((c) => c.attributes["gen_ai.usage.input_tokens"]).sort(), [11, 11, 40]);
      assert.deepEqual(chats.map((c) => c.attributes["gen_ai.usage.output_tokens"]).sort(), [3, 7, 7]);
      for (const c of chats) {
        assert.equal(c.name, "chat m");
        assert.equal(c.attributes["gen_ai.operation.name"], "chat");
        assert.equal(c.attributes["gen_ai.request.model"], "m");
        assert.ok(Array.isArray(c.attributes["gen_ai.response.finish_reasons"]));
        assert.ok(typeof c.attributes["gen_ai.provider.name"] === "string");
        assert.equal(c.kind, 3, "CLIENT");
      }
      const shell = tools.filter((t) => t.attributes["gen_ai.tool.name"] === "shell");
      assert.equal(shell.length, 2);
      const veto = shell.find((t) => t.attributes["noema.governance.decision"] === "veto")!;
      assert.equal(veto.status.code, 2);
      assert.match(veto.status.message, /no rm -rf here/);
      // The call that ran carries the model's own id (a vetoed call was decided and recorded before the model's id
      // was known: it keeps noema's key).
      const ran = shell.find((t) => t !== veto)!;
      assert.equal(ran.attributes["gen_ai.tool.call.id"], "t1");

      const e = await noema(["export", "otel", out.episode_id, "--endpoint", `${later.url}/v1/traces`], {
        OTEL_SERVICE_NAME: "agents",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test",
      });
      assert.equal(e.code, 0, e.stderr);
      assert.equal(comparable(later.spans()), comparable(live.spans()), "the same trace live and after the fact");
    } finally {
      await model.close();
      await live.close();
      await later.close();
    }
  });
});

describe("content", () => {
  it("is exported live on opt-in (the standard variable), masked as in the files", T, async () => {
    const live = await startOtlpReceiver();
    const secret = "sk-otel-secret-value-9911";
    const task = tmp.file(
      "secret.jsonc",
      JSON.stringify({
        task: "use the token",
        using: "shell",
        steps: [{ kind: "act", description: "print it", inputs: { command: `echo ${secret}` } }],
      }),
    );
    try {
      const r = await noema(["--otel", live.url, "run", task, "--secret", "DEPLOY_TOKEN", "--json"], {
        DEPLOY_TOKEN: secret,
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
      });
      assert.equal(r.code, 0, r.stderr);
      const tool = live.spans().find((s) => s.name.startsWith("execute_tool "))!;
      const args = String(tool.attributes["gen_ai.tool.call.arguments"]);
      assert.match(args, /echo /, "the arguments are exported");
      assert.ok(typeof tool.attributes["gen_ai.tool.call.result"] === "string", "and the result");
      assert.ok(!comparable(live.spans()).includes(secret), "the secret is masked, as in the files");
      const root = live.spans().find((s) => s.parentSpanId === "")!;
      assert.equal(root.attributes["noema.task"], "use the token");
    } finally {
      await live.close();
    }
  });
});

describe("the end of a run hands what it could not send to a background export", () => {
  it("with no time to wait, the background process delivers the same trace", T, async () => {
    const live = await startOtlpReceiver();
    const later = await startOtlpReceiver();
    try {
      const r = await noema(["--otel", live.url, "run", join(REPO, "examples", "sql-vetoed.jsonc"), "--json"], {
        NOEMA_OTEL_FLUSH_MS: "0",
      });
      assert.equal(r.code, 3, r.stderr);
      const out = JSON.parse(r.stdout);
      await live.waitFor((spans) => spans.some((s) => s.parentSpanId === ""));
      // A batch in flight when the run handed over may be sent again by the background process: same ids.
      const spans = [...new Map(live.spans().map((s) => [s.spanId, s])).values()];
      checkTree(spans, out.episode_id, out.episode_dir);
      const e = await noema(["export", "otel", out.episode_id, "--endpoint", later.url]);
      assert.equal(e.code, 0, e.stderr);
      assert.equal(comparable(later.spans()), comparable(spans), "the same trace");
    } finally {
      await live.close();
      await later.close();
    }
  });
});

describe("a run killed while it goes", () => {
  it(
    "leaves its export process to send what the files hold, the root left to the resume; then it exits",
    T,
    async () => {
      const live = await startOtlpReceiver();
      const at = join(tmp.path, "killed-root");
      const go = join(tmp.path, "killed-go");
      const task = tmp.file(
        "killed.jsonc",
        JSON.stringify({
          task: "killed mid-run",
          using: "shell",
          steps: [
            { kind: "act", description: "first", inputs: { command: "echo first" } },
            { kind: "act", description: "held", inputs: { command: `while [ ! -e '${go}' ]; do sleep 0.05; done` } },
          ],
        }),
      );
      const mark = `NOEMA_TEST_KILLED_RUN=${process.pid}-${Date.now()}`;
      const [name, value] = mark.split("=");
      const argv = [...cliCommand(), "--root", at, "--otel", live.url, "run", task, "--json"];
      const run = spawn(argv[0], argv.slice(1), { cwd: REPO, env: envWith({ [name]: value }), stdio: "ignore" });
      try {
        // Killed as soon as the first step's act line is written: whether its span was sent yet or not.
        const until = Date.now() + 60_000;
        let dir: string | null = null;
        while (Date.now() < until) {
          // The episode in place (`ep_…`), not the `.tmp-ep_…` directory it is created in and renamed from.
          const ids = existsSync(join(at, "episodes"))
            ? readdirSync(join(at, "episodes")).filter((n) => n.startsWith("ep_"))
            : [];
          dir = ids.length === 1 ? join(at, "episodes", ids[0]) : null;
          if (dir !== null && textIfThere(join(dir, "events.jsonl")).includes('"phase":"act"')) break;
          await new Promise((r) => setTimeout(r, 10));
        }
        assert.ok(dir !== null, "the run started");
        // Its export process may start a moment after the act line on a busy machine: waited for (a hang bound).
        const exporters: number[] = [];
        for (const end = Date.now() + 60_000; exporters.length === 0 && Date.now() < end;) {
          exporters.push(...pidsWithEnv((e) => e === mark).filter((pid) => pid !== run.pid));
          if (exporters.length === 0) await new Promise((r) => setTimeout(r, 10));
        }
        assert.ok(exporters.length >= 1, "the export runs in a process of its own");
        run.kill("SIGKILL");
        await live.waitFor((spans) => spans.some((s) => s.name === "execute_tool adapter:shell"));
        const gone = Date.now() + 30_000;
        while (pidsWithEnv((e) => e === mark).some((pid) => exporters.includes(pid)) && Date.now() < gone) {
          await new Promise((r) => setTimeout(r, 50));
        }
        assert.deepEqual(
          pidsWithEnv((e) => e === mark).filter((pid) => exporters.includes(pid)),
          [],
          "the export process ended",
        );
        assert.deepEqual(
          live.spans().filter((s) => s.parentSpanId === "").map((s) => s.name),
          [],
          "no root: not ended",
        );
      } finally {
        writeFileSync(go, "");
        run.kill("SIGKILL");
        await live.close();
      }
    },
  );
});

/** A task file of two shell steps, "check" then "deploy", the second held by the approval gate. */
function gatedTask(name: string, task: string): string {
  return tmp.file(
    name,
    JSON.stringify({
      task,
      using: "shell",
      policies: [join(REPO, "plugins", "policies", "approval-gate.ts")],
      steps: [
        { kind: "act", description: "check", inputs: { command: "echo checked" } },
        { kind: "act", description: "deploy", inputs: { command: "echo deploy now" } },
      ],
    }),
  );
}

describe("a paused run, approved and resumed", () => {
  it("exports its spans across the pause: the same trace as after the fact, the decider on the span", T, async () => {
    const live = await startOtlpReceiver();
    const later = await startOtlpReceiver();
    const task = gatedTask("gated.jsonc", "deploy after a check");
    try {
      const r = await noema(["--otel", live.url, "run", task, "--json"]);
      assert.equal(r.code, 4, r.stderr + r.stdout);
      const out = JSON.parse(r.stdout);
      const a = await noema(["--otel", live.url, "approve", out.episode_id, "--by", "ana", "--resume", "--json"]);
      assert.equal(a.code, 0, a.stderr + a.stdout);
      // The root is sent at the pause and again, ended later, after the resume: the receiver keeps the last one.
      const last = new Map(live.spans().map((s) => [s.spanId, s]));
      const spans = [...last.values()];
      const { tools } = checkTree(spans, out.episode_id, out.episode_dir);
      assert.equal(tools.length, 2);
      const deploy = tools.find((t) => t.attributes["noema.step.id"] === "step-2")!;
      assert.equal(deploy.attributes["noema.approval.decision"], "approved");
      // Decided by the OS user (authenticated), "ana" the name it gave.
      assert.equal(deploy.attributes["noema.approval.decided_by"], osUserName());
      assert.equal(deploy.attributes["noema.approval.claimed_by"], "ana");
      assert.equal(live.spans().length, spans.length + 1, "only the root is sent twice");

      const e = await noema(["export", "otel", out.episode_id, "--endpoint", later.url]);
      assert.equal(e.code, 0, e.stderr);
      assert.equal(comparable(later.spans()), comparable(spans), "the same trace live and after the fact");
    } finally {
      await live.close();
      await later.close();
    }
  });
});

describe("a run that waits for its decision (--wait, a shared store)", () => {
  it(
    "exports what its resume wrote live too: the root as the resume ended it, the same trace as after the fact",
    T,
    async () => {
      const live = await startOtlpReceiver();
      const later = await startOtlpReceiver();
      const store = pathToFileURL(join(tmp.path, "team store")).href;
      const task = gatedTask("gated-wait.jsonc", "deploy after a check, waiting");
      try {
        assert.equal((await noema(["store", "init", "--store", store])).code, 0);
        // Nobody decides: the wait runs out and denies the call (decided by `timeout`); the run resumes and ends vetoed.
        const args = ["--otel", live.url, "--store", store, "run", task, "--wait", "5s", "--json"];
        const r = await noema(args);
        const out = JSON.parse(r.stdout.trim().split("\n").pop()!);
        assert.equal(out.status, "vetoed", r.stderr + r.stdout);
        const last = [...new Map(live.spans().map((s) => [s.spanId, s])).values()];
        const { tools } = checkTree(last, out.episode_id, out.episode_dir);
        // The denied call runs nothing (no tool span); the resume's end is the root, sent again with the final status.
        assert.equal(tools.length, 1);
        const root = last.find((sp) => sp.parentSpanId === "")!;
        assert.equal(root.attributes["noema.episode.status"], "vetoed", "the root as the resume ended it");
        const e = await noema(["export", "otel", out.episode_id, "--endpoint", later.url]);
        assert.equal(e.code, 0, e.stderr);
        assert.equal(comparable(later.spans()), comparable(last), "the same trace live and after the fact");
      } finally {
        await live.close();
        await later.close();
      }
    },
  );
});

describe("a resumed run that hands over at once", () => {
  it("sends only what the resume wrote, and the root again", T, async () => {
    const live = await startOtlpReceiver();
    const task = gatedTask("gated2.jsonc", "deploy after a check");
    try {
      const r = await noema(["--otel", live.url, "run", task, "--json"]);
      assert.equal(r.code, 4, r.stderr + r.stdout);
      const out = JSON.parse(r.stdout);
      const first = live.spans().length;
      const a = await noema(["--otel", live.url, "approve", out.episode_id, "--resume", "--json"], {
        NOEMA_OTEL_FLUSH_MS: "0",
      });
      assert.equal(a.code, 0, a.stderr + a.stdout);
      // The root comes last, in a request of its own, once the resume's spans are sent: waited for, not a count.
      await live.waitFor((spans) => spans.slice(first).some((s) => s.parentSpanId === ""));
      // Nothing the first run sent is sent again but the root (ended later, same id). A span sent just before the
      // hand-over may come twice (its acknowledgement had not reached the run yet): the same id, once in the trace.
      const sentBefore = new Set(
        live.spans().slice(0, first).filter((s) => s.parentSpanId !== "").map((s) => s.spanId),
      );
      const after = live.spans().slice(first);
      assert.deepEqual(
        after.filter((s) => sentBefore.has(s.spanId)).map((s) => s.name),
        [],
        "no resend from the start",
      );
      const names = [...new Map(after.map((s) => [s.spanId, s.name])).values()].sort();
      assert.deepEqual(names, ["execute_tool adapter:shell", "invoke_agent shell"], "the deploy step and the root");
    } finally {
      await live.close();
    }
  });
});

describe("a collector that fails never harms a run", () => {
  /** The task: the second step waits until the warning is on stderr, so the third records it. */
  const task = (errFile: string) =>
    tmp.file(
      `fault-${Math.random().toString(36).slice(2)}.jsonc`,
      JSON.stringify({
        task: "three steps",
        using: "shell",
        steps: [
          { kind: "act", description: "one", inputs: { command: "echo one" } },
          {
            kind: "act",
            description: "wait for the warning",
            inputs: {
              command: `i=0; while [ $i -lt 300 ]; do grep -q 'OpenTelemetry export' '${errFile}' && exit 0; ` +
                `sleep 0.1; i=$((i+1)); done; exit 1`,
            },
          },
          { kind: "act", description: "three", inputs: { command: "echo three" } },
        ],
      }),
    );

  const faults: [string, () => Promise<{ url: string; close(): Promise<void> }>, Record<string, string>][] = [
    ["down", async () => {
      const r = await startOtlpReceiver();
      await r.close();
      return r;
    }, { OTEL_EXPORTER_OTLP_TIMEOUT: "1000" }],
    ["slow beyond the timeout", () => startOtlpReceiver(() => ({ delayMs: 10_000 })), {
      OTEL_EXPORTER_OTLP_TIMEOUT: "500",
    }],
    ["503 with Retry-After", () => startOtlpReceiver(() => ({ status: 503, retryAfter: 1 })), {
      OTEL_EXPORTER_OTLP_TIMEOUT: "2000",
    }],
    ["400", () => startOtlpReceiver(() => ({ status: 400 })), {}],
  ];

  for (const [name, start, env] of faults) {
    it(
      `${name}: the run ends ok, the warning is said once and recorded; export otel delivers it later`,
      T,
      async () => {
        const receiver = await start();
        const good = await startOtlpReceiver();
        const errFile = join(tmp.path, `err-${name.replace(/\W+/g, "-")}.txt`);
        try {
          const r = await noema(["--otel", receiver.url, "run", task(errFile), "--json"], env, errFile);
          const stderr = readFileSync(errFile, "utf8");
          assert.equal(r.code, 0, stderr + r.stdout);
          const out = JSON.parse(r.stdout);
          assert.equal(out.status, "ok");
          assert.equal(stderr.match(/OpenTelemetry export to /g)?.length, 1, `said once: ${stderr}`);
          const notes = events(out.episode_dir).filter((e) => e.event_type === "otel.unavailable");
          assert.equal(notes.length, 1, "recorded once as a runtime event");
          assert.equal(notes[0].phase, "runtime");
          assert.match(String(notes[0].payload.endpoint), /\/v1\/traces$/);
          const v = await noema(["validate", out.episode_dir]);
          assert.equal(v.code, 0, v.stdout + v.stderr);

          const e = await noema(["export", "otel", out.episode_id, "--endpoint", good.url]);
          assert.equal(e.code, 0, e.stderr);
          checkTree(good.spans(), out.episode_id, out.episode_dir);
        } finally {
          await receiver.close().catch(() => {});
          await good.close();
        }
      },
    );
  }

  it(
    "down, and a run too short for the export's retries: said once on stderr and recorded all the same",
    T,
    async () => {
      const down = `http://127.0.0.1:${REFUSED_PORT}`; // nothing listens there, nor can (see REFUSED_PORT)
      const errFile = join(tmp.path, "err-short.txt");
      const short = tmp.file(
        "short.jsonc",
        JSON.stringify({
          task: "one step",
          using: "shell",
          steps: [{ kind: "act", description: "one", inputs: { command: "echo one" } }],
        }),
      );
      // As a user runs it: the end of the run does not wait for the export (the default), which hands over.
      const r = await noema(["--otel", down, "run", short, "--json"], { NOEMA_OTEL_FLUSH_MS: "" }, errFile);
      const stderr = readFileSync(errFile, "utf8");
      assert.equal(r.code, 0, stderr + r.stdout);
      const out = JSON.parse(r.stdout);
      assert.equal(out.status, "ok");
      assert.equal(
        stderr.match(/OpenTelemetry export to \S+\/v1\/traces failed: /g)?.length,
        1,
        `said once: ${stderr}`,
      );
      const notes = events(out.episode_dir).filter((e) => e.event_type === "otel.unavailable");
      assert.equal(notes.length, 1, "recorded once as a runtime event");
      assert.match(String(notes[0].payload.error), /ECONNREFUSED/);
      const v = await noema(["validate", out.episode_dir]);
      assert.equal(v.code, 0, v.stdout + v.stderr);
    },
  );

  it("export otel to a receiver that rejects: exit 1 with the reason; no collector: exit 2", T, async () => {
    const bad = await startOtlpReceiver(() => ({ status: 400 }));
    try {
      const e = await noema(["export", "otel", "last", "--endpoint", bad.url]);
      assert.equal(e.code, 1, e.stderr);
      assert.match(e.stderr, /OpenTelemetry export to http:\/\/127\.0\.0\.1:\d+\/v1\/traces failed/);
      const none = await noema(["export", "otel", "last"]);
      assert.equal(none.code, 2);
      assert.match(none.stderr, /no collector/);
      const proto = await noema(["export", "otel", "last", "--endpoint", bad.url, "--protocol", "grpc"]);
      assert.equal(proto.code, 2);
      assert.match(proto.stderr, /--protocol: grpc/);
      const missing = await noema(["export", "otel", "ep_nothere", "--endpoint", bad.url]);
      assert.equal(missing.code, 1, missing.stderr);
    } finally {
      await bad.close();
    }
  });
});
