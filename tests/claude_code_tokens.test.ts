// The real Claude Code (node_modules/.bin/claude, 2.1.330), offline: the session's model turns and tokens, read
// from its transcript, are the episode's model.jsonl, summary.json metrics.tokens and metrics.cost.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { assertSound, bash, claudeSessions } from "./helpers/claude_session.ts";
import { tempDir } from "./helpers/tmp.ts";
import { findTranscript, transcriptSums } from "./helpers/claude_transcript.ts";
import { estimateCost } from "../src/runtime/cost/prices.ts";
import { writeAgentPolicies } from "./helpers/policies.ts";

const tmp = tempDir("noema-claude-tokens-");
after(() => tmp.cleanup());
const session = claudeSessions(tmp.path);
const policyDir = writeAgentPolicies(join(tmp.path, "policies"));

/** Real processes on a machine that may be loaded: far more than they need, far less than forever. */
const REAL_AGENT_TIMEOUT_MS = 60_000;

describe("a Claude Code episode's tokens (real Claude Code, scripted model)", () => {
  test("summary metrics.tokens equal the transcript's sums; model.jsonl has a line per turn; the cost is priced", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const s = await session([
      {
        text: "Listing",
        tools: [bash("toolu_t1", "echo one"), bash("toolu_t2", "echo two")],
        usage: { input_tokens: 1200, output_tokens: 40, cache_creation_input_tokens: 3000, cache_read_input_tokens: 0 },
      },
      {
        tools: [bash("toolu_t3", "echo three")],
        usage: { input_tokens: 50, output_tokens: 25, cache_creation_input_tokens: 200, cache_read_input_tokens: 4200 },
      },
      {
        text: "Done.",
        usage: { input_tokens: 30, output_tokens: 7, cache_creation_input_tokens: 0, cache_read_input_tokens: 4400 },
      },
    ]);
    try {
      const prices = { "claude-opus-5-5": { input: 1, output: 2, cacheWrite: 3, cacheRead: 0.5 } };
      writeFileSync(join(s.box.workspace, "noema.jsonc"), JSON.stringify({ prices }));
      const r = await s.run("count tokens", ["--json"]);
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout);
      const sums = transcriptSums(findTranscript(s.box.home));
      assert.equal(sums.calls, 3, "the transcript holds the three turns");
      const summary = JSON.parse(readFileSync(join(out.episode_dir, "summary.json"), "utf8"));
      const tokens = summary.metrics.tokens;
      assert.deepEqual(
        [tokens.input, tokens.output, tokens.total, tokens.model_calls, tokens.cache_write, tokens.cache_read],
        [sums.input, sums.output, sums.input + sums.output, sums.calls, sums.cache_write, sums.cache_read],
      );
      assert.deepEqual(Object.keys(tokens.models), [...sums.models]);
      // model.jsonl: one line per turn, the same sums.
      const turns = readFileSync(join(out.episode_dir, "model.jsonl"), "utf8").trim().split("\n").map((l) =>
        JSON.parse(l)
      );
      assert.deepEqual(turns.map((t) => t.turn), [1, 2, 3]);
      assert.deepEqual(turns.map((t) => t.response.usage.output_tokens), [40, 25, 7]);
      // The cost: the user's prices from noema.jsonc…
      const cost = summary.metrics.cost;
      const [model] = sums.models;
      assert.equal(cost.models[model].source, "noema.jsonc");
      const own = (sums.input - sums.cache_write - sums.cache_read) * 1 + sums.output * 2 + sums.cache_write * 3 +
        sums.cache_read * 0.5;
      assert.ok(Math.abs(cost.usd - own / 1e6) < 1e-9, `${cost.usd} vs ${own / 1e6}`);
      // …and with the built-in table, what Claude Code itself reckons.
      assert.equal(typeof sums.claudeCost, "number", "Claude Code recorded its cost");
      const builtIn = estimateCost(tokens.models).usd!;
      assert.ok(Math.abs(builtIn - sums.claudeCost!) < 1e-9, `${builtIn} vs Claude Code's ${sums.claudeCost}`);
      const view = await s.cmd(["view", out.episode_id]);
      assert.match(view.stdout, /tokens/);
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });

  test("an episode paused for approval, then aborted, still has the turns claude took", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const s = await session([{
      text: "Deploying",
      tools: [bash("toolu_g1", "echo deploy")],
      usage: { input_tokens: 700, output_tokens: 30, cache_creation_input_tokens: 100, cache_read_input_tokens: 50 },
    }, { text: "Done." }]);
    try {
      const r = await s.run("deploy it", ["--json", "--policy", join(policyDir, "gate.ts")]);
      assert.equal(r.code, 4, r.stderr);
      const out = JSON.parse(r.stdout);
      const aborted = await s.cmd(["resume", out.episode_id, "--abort"]);
      assert.ok([0, 1].includes(aborted.code!), aborted.stderr);
      const sums = transcriptSums(findTranscript(s.box.home));
      const tokens = JSON.parse(readFileSync(join(out.episode_dir, "summary.json"), "utf8")).metrics.tokens;
      assert.deepEqual([tokens.input, tokens.output, tokens.model_calls], [sums.input, sums.output, sums.calls]);
      assert.equal(tokens.model_calls, 1);
    } finally {
      await s.server.close();
    }
  });
});
