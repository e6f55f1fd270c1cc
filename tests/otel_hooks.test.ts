/**
 * The hook path exported to OpenTelemetry: with `OTEL_EXPORTER_OTLP_ENDPOINT`
 * set, an agent session governed by `noema hook` is exported by the resident
 * hook server (the first call, answered in its own process, included); when
 * the server stops it sends the root span, and the trace equals the one
 * `noema export otel` gives after the fact. As in tests/hook_server.test.ts,
 * every call runs `bun bin/noema.ts` (the server needs Bun).
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { traceIdOf } from "../src/export/otel/ids.ts";
import { runChild } from "./helpers/child.ts";
import { REPO } from "./helpers/cli.ts";
import { type ReceivedSpan, startOtlpReceiver } from "./helpers/otlp_receiver.ts";
import { REFUSED_PORT } from "./helpers/local_http.ts";
import { tempDir } from "./helpers/tmp.ts";
import { stopHookServers } from "./helpers/processes.ts";

const tmp = tempDir("noema-otel-hooks-");
after(() => tmp.cleanup());
const BUN = join(REPO, "node_modules", ".bin", "bun");
const ENTRY = join(REPO, "bin", "noema.ts");
const policy = tmp.file(
  "guard.ts",
  `export default { name: "Guard", version: "1.0", advise(state) {
    if (String(state.action.command ?? "").includes("git push")) return { kind: "veto", advice: "no pushes from agents", confidence: 0.9 };
  } };\n`,
);
const dir = join(tmp.path, "box"), servers = join(dir, "servers"), root = join(dir, ".noema");
mkdirSync(servers, { recursive: true, mode: 0o700 });
const log = join(dir, "server.log");

function env(extra: Record<string, string>): Record<string, string> {
  const e: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("OTEL_")) e[k] = v;
  return { ...e, NOEMA_HOOK_SERVER_DIR: servers, NOEMA_HOOK_SERVER_LOG: log, ...extra };
}

async function hook(payload: unknown, extra: Record<string, string>) {
  const argv = [ENTRY, "hook", "claude-code", "--root", root, "--policy", policy, "--print", "--grant", "--no-finish"];
  return await runChild(BUN, argv, { cwd: tmp.path, input: JSON.stringify(payload), env: env(extra) });
}

const pre = (id: string, command: string) => ({
  session_id: "s-otel",
  transcript_path: join(tmp.path, "t.jsonl"),
  cwd: tmp.path,
  permission_mode: "default",
  hook_event_name: "PreToolUse",
  tool_name: "Bash",
  tool_input: { command },
  tool_use_id: id,
});
const post = (id: string, command: string, stdout: string) => ({
  ...pre(id, command),
  hook_event_name: "PostToolUse",
  tool_response: { stdout, stderr: "" },
});

async function waitFor(check: () => boolean, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 50));
  }
}

function comparable(spans: ReceivedSpan[]): string {
  const sorted = [...spans].sort((a, b) => a.spanId.localeCompare(b.spanId));
  return JSON.stringify(sorted, (_k, v) => typeof v === "bigint" ? v.toString() : v);
}

describe("the hook server exports the sessions it serves", () => {
  test("every call of the session, its verdicts, then the root when it stops", { timeout: 90_000 }, async () => {
    const live = await startOtlpReceiver();
    const later = await startOtlpReceiver();
    const o = { OTEL_EXPORTER_OTLP_ENDPOINT: live.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" };
    try {
      assert.equal((await hook(pre("toolu_1", "ls"), o)).code, 0);
      await waitFor(() => readdirSync(servers).some((n) => n.endsWith(".sock")));
      const veto = await hook(pre("toolu_2", "git push origin main"), o);
      assert.equal(JSON.parse(veto.stdout).hookSpecificOutput.permissionDecision, "deny", veto.stderr);
      assert.equal((await hook(post("toolu_1", "ls", "a.txt"), o)).code, 0);
      assert.match(readFileSync(log, "utf8"), /answered exit 0/, "the server answered calls");
      rmSync(servers, { recursive: true, force: true }); // the server stops
      await live.waitFor((spans) => spans.some((s) => s.parentSpanId === ""));
      const ep = readdirSync(join(root, "episodes")).find((n) => n.startsWith("ep_"))!;
      await waitFor(() => !existsSync(join(root, "episodes", ep, "lock")));
      const spans = live.spans();
      assert.deepEqual([...new Set(spans.map((s) => s.traceId))], [traceIdOf(ep)]);
      const tools = spans.filter((s) => s.name === "execute_tool Bash");
      assert.equal(tools.length, 2, spans.map((s) => s.name).join(", "));
      const vetoed = tools.find((t) => t.status.code === 2)!;
      assert.match(vetoed.status.message, /no pushes from agents/);
      assert.equal(tools.find((t) => t !== vetoed)!.attributes["gen_ai.tool.call.id"], "toolu_1");
      assert.equal(new Set(spans.map((s) => s.spanId)).size, spans.length, "each span sent once");

      const e = await runChild(BUN, [ENTRY, "--root", root, "export", "otel", ep, "--endpoint", later.url], {
        cwd: tmp.path,
        env: env({}),
      });
      assert.equal(e.code, 0, e.stderr);
      assert.equal(comparable(later.spans()), comparable(spans), "the same trace live and after the fact");
    } finally {
      await live.close();
      await later.close();
    }
  });
});

describe("the hook server says once that the collector failed", () => {
  test("in its log, and in the episode as an otel.unavailable runtime event at the next call", {
    timeout: 90_000,
  }, async () => {
    const box = join(tmp.path, "down"), socks = join(box, "servers"), at = join(box, ".noema");
    mkdirSync(socks, { recursive: true, mode: 0o700 });
    const serverLog = join(box, "server.log");
    // A port nothing listens on, nor can (not a closed receiver's: see REFUSED_PORT): every export is refused.
    const url = `http://127.0.0.1:${REFUSED_PORT}`;
    const e = {
      ...env({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_TIMEOUT: "2000" }),
      NOEMA_HOOK_SERVER_DIR: socks,
      NOEMA_HOOK_SERVER_LOG: serverLog,
    };
    const call = async (payload: unknown) => {
      const argv = [
        ENTRY,
        "hook",
        "claude-code",
        "--root",
        at,
        "--policy",
        policy,
        "--print",
        "--grant",
        "--no-finish",
      ];
      const r = await runChild(BUN, argv, { cwd: tmp.path, input: JSON.stringify(payload), env: e });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, "", "the agent hears nothing of the collector");
    };
    const logText = () => existsSync(serverLog) ? readFileSync(serverLog, "utf8") : "";
    try {
      await call(pre("toolu_1", "ls"));
      await waitFor(() => logText().includes("listening on"));
      await call(post("toolu_1", "ls", "a.txt"));
      await waitFor(() => /OpenTelemetry export of ep_\S+: noema: OpenTelemetry export to .* failed/.test(logText()));
      await call(pre("toolu_2", "pwd"));
      await call(post("toolu_2", "pwd", "/w"));
      const ep = readdirSync(join(at, "episodes")).find((n) => n.startsWith("ep_"))!;
      const events = readFileSync(join(at, "episodes", ep, "events.jsonl"), "utf8").trim().split("\n")
        .map((l) => JSON.parse(l));
      const notices = events.filter((x) => x.event_type === "otel.unavailable");
      assert.equal(notices.length, 1, "said once");
      assert.equal(notices[0].phase, "runtime");
      assert.equal(notices[0].payload.endpoint, `${url}/v1/traces`);
      assert.match(notices[0].payload.error, /\S/);
      assert.equal(logText().match(/OpenTelemetry export of/g)?.length, 1, "logged once");
    } finally {
      await stopHookServers(socks); // and waits: it writes its episode as it stops
    }
  });
});
