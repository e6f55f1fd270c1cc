/**
 * A Claude Code episode as an OpenTelemetry trace: the real Claude Code
 * (offline, a scripted Anthropic server) governed by noema, its run exported
 * live with `--otel`, then again with `noema export otel`: the same trace,
 * one `execute_tool Bash` span per call with its verdict, the vetoed call
 * with an ERROR status and the policy's reason; each span is sent once
 * (the agent's hook calls, which inherit the variable, leave it to the run).
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { spanIdOf, traceIdOf } from "../src/export/otel/ids.ts";
import { bash, claudeSessions } from "./helpers/claude_session.ts";
import { type ReceivedSpan, startOtlpReceiver } from "./helpers/otlp_receiver.ts";
import { writeAgentPolicies } from "./helpers/policies.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-otel-claude-");
after(() => tmp.cleanup());
const policyDir = writeAgentPolicies(join(tmp.path, "policies"));
const sessions = claudeSessions(tmp.path);

function comparable(spans: ReceivedSpan[]): string {
  const sorted = [...spans].sort((a, b) => a.spanId.localeCompare(b.spanId));
  return JSON.stringify(sorted, (_k, v) => typeof v === "bigint" ? v.toString() : v);
}

describe("a Claude Code episode exported to OpenTelemetry", () => {
  test("live and after the fact: the same trace, with each call's verdict", { timeout: 90_000 }, async () => {
    const s = await sessions([
      { text: "Checking", tools: [bash("toolu_o1", "echo hello-otel")] },
      { text: "Cleaning", tools: [bash("toolu_o2", "echo forbidden-thing")] },
      { text: "Done." },
    ]);
    const live = await startOtlpReceiver();
    const later = await startOtlpReceiver();
    try {
      // The standard variable, which the agent's hook calls inherit: they leave the export to the run.
      (s.env as Record<string, string>).OTEL_EXPORTER_OTLP_ENDPOINT = live.url;
      (s.env as Record<string, string>).NOEMA_OTEL_FLUSH_MS = "60000"; // the run's end waits for its export
      const r = await s.run("say hello", ["--policy", join(policyDir, "no-forbidden.ts"), "--json"]);
      const out = JSON.parse(r.stdout);
      const lines = readFileSync(join(out.episode_dir, "events.jsonl"), "utf8").trim().split("\n");
      const acts = lines.map((l) => JSON.parse(l)).filter((e) => e.phase === "act");
      const spans = live.spans();
      assert.deepEqual([...new Set(spans.map((x) => x.traceId))], [traceIdOf(out.episode_id)]);
      const root = spans.find((x) => x.parentSpanId === "")!;
      assert.equal(root.name, "invoke_agent claude-code");
      assert.equal(root.attributes["gen_ai.provider.name"], "anthropic");
      const tools = spans.filter((x) => x.name === "execute_tool Bash");
      assert.equal(tools.length, acts.filter((a) => a.payload.tool === "Bash").length);
      assert.ok(tools.length >= 2, `two Bash calls: ${spans.map((x) => x.name)}`);
      for (const a of acts) assert.ok(spans.some((x) => x.spanId === spanIdOf(out.episode_id, a.id)), a.id);
      const vetoed = tools.filter((t) => t.status.code === 2);
      assert.equal(vetoed.length, 1, "the forbidden call is vetoed");
      assert.equal(vetoed[0].attributes["noema.governance.decision"], "veto");
      assert.ok(String(vetoed[0].status.message).length > 0, "with its reason");
      assert.equal(new Set(spans.map((x) => x.spanId)).size, spans.length, "each span sent once");
      // The model turns read from Claude Code's transcript: a chat span each, the tokens summing to the summary's.
      const tokens = JSON.parse(readFileSync(join(out.episode_dir, "summary.json"), "utf8")).metrics.tokens;
      const chats = spans.filter((x) => x.name.startsWith("chat "));
      assert.equal(chats.length, tokens.model_calls, `chat spans: ${spans.map((x) => x.name)}`);
      const sum = (k: string) => chats.reduce((n, x) => n + Number(x.attributes[k]), 0);
      assert.equal(sum("gen_ai.usage.input_tokens"), tokens.input);
      assert.equal(sum("gen_ai.usage.output_tokens"), tokens.output);

      const e = await s.cmd(["export", "otel", out.episode_id, "--endpoint", later.url]);
      assert.equal(e.code, 0, e.stderr);
      assert.equal(comparable(later.spans()), comparable(spans), "the same trace live and after the fact");
    } finally {
      await s.server.close();
      await live.close();
      await later.close();
    }
  });
});
