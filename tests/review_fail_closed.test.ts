// deno-lint-ignore-file no-explicit-any -- tests read artifacts as loose JSON
/**
 * Result policies fail closed (issue 37 §4): a `redact` verdict's patterns run
 * where the policy runs (its worker), within the policy timeout; a pattern
 * that backtracks exponentially (which Bun's engine gives up on, reporting
 * "no match") is refused before it runs; a pattern that times out or is
 * refused withholds the result (`review_failed`), never shows it unmasked —
 * through the episode core (what `noema hook` uses), `noema run --using
 * shell` and `noema hook claude-code` (PostToolUse).
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EpisodeCore, validate } from "noema";
import { PolicyGovernor } from "../src/llm/policy_governor.ts";
import { maskPatterns, unsafePatternProblem } from "../src/runtime/mask_patterns.ts";
import { cli, REPO } from "./helpers/cli.ts";
import { CREDENTIALS } from "../plugins/policies/secret-scanner.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir();
after(() => tmp.cleanup());
const root = join(tmp.path, "root");
const KEY = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789";
/** An AWS secret key: a shape noema's own masking does not know, so only the policy's pattern can mask it. */
const AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
/** Catastrophic for a backtracking engine on a long run of `a`s; Bun's gives up and reports no match at all. */
const EXPONENTIAL = "(?:a+)+b|wJalr[\\w/]+|sk-[\\w-]+";
/** Polynomial (O(n⁵)): not refused, but never ends on 20,000 word characters; only the timeout stops it. */
const POLYNOMIAL = "\\w*\\w*\\w*\\w*\\w*!|wJalr[\\w/]+|sk-[\\w-]+";
const LONG = "a".repeat(20_000);

const events = (dir: string): any[] =>
  readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
const reviewsOf = (dir: string) =>
  events(dir).filter((e) => e.phase === "governance" && e.payload.stage === "review").map((e) => e.payload);

/** A policy file redacting with the exponential patterns (20 of them), the polynomial one, or a plain one. */
const GREEDY = join(tmp.path, "greedy.ts");
writeFileSync(
  GREEDY,
  `export default { name: "Greedy", version: "1.0", review(s) {
    const x = JSON.stringify(s.result.output);
    if (x.includes("exp")) return { kind: "redact", advice: "mask", patterns: Array(20).fill(${
    JSON.stringify(EXPONENTIAL)
  }) };
    if (x.includes("poly")) return { kind: "redact", advice: "mask", patterns: [${JSON.stringify(POLYNOMIAL)}] };
    return { kind: "redact", advice: "mask", patterns: ["wJalr[\\\\w/]+", "sk-[\\\\w-]+"] };
  } };\n`,
);

describe("patterns an engine cannot run safely are refused before they run", () => {
  test("nested quantifiers, quantified alternations and backreferences; plain patterns pass", () => {
    for (const p of ["(a+)+$", "(?:a+)+b", "(\\w|\\s)*", "(?:x?)+", "((a+))+", "(a?){30}", "(a)\\1", "(?<n>a)\\k<n>"]) {
      assert.ok(unsafePatternProblem(p), `${p} is refused`);
    }
    for (
      const p of ["sk-[A-Za-z0-9]{20,}", "sk-ant-[\\w-]+", "(?:[A-Za-z0-9+/]{4})*", "(?:foo|bar)", "[(]+", "\\(a+\\)+"]
    ) {
      assert.equal(unsafePatternProblem(p), null, `${p} is accepted`);
    }
    // The shipped SecretScanner's patterns (lookbehinds, alternations, lazy [\s\S]*?) all run.
    for (const c of CREDENTIALS) assert.equal(unsafePatternProblem(c.pattern), null, c.name);
    assert.throws(() => maskPatterns({ out: `${LONG}c ${KEY}` }, ["sk-\\w+", EXPONENTIAL]), {
      name: "UnsafePattern",
      message: /patterns\[1\] .*: a repeated group holds a quantifier or an alternation/,
    });
  });
});

describe("a redaction whose patterns cannot run withholds the result (review_failed)", () => {
  let n = 0;
  const call = async (core: EpisodeCore, output: string) => {
    const id = `call_${++n}`;
    await core.propose({ kind: "tool", tool: "Bash", input: { command: "cat log" }, call_id: id });
    return (await core.record(id, { status: "ok", output } as any))!;
  };

  test("in the policy's worker: refused patterns and a pattern past the timeout block; the worker serves on", {
    timeout: 120_000,
  }, async () => {
    const core = await EpisodeCore.open("fail closed", {
      root,
      using: "claude-code",
      policies: [GREEDY],
      // The worker the timeout stops is started again, and reloads the policy, before the next call's own timeout
      // starts (LoadedPolicy.prepare): 3 s is generous for that call alone. Not more: the polynomial pattern burns a
      // core for the whole timeout.
      policy_timeout_ms: 3_000,
      // fail_open: a failed redaction is withheld all the same.
      failure_policy: "fail_open",
    });
    const exp = await call(core, `exp ${LONG}c ${KEY}`);
    assert.equal(exp.decision, "block");
    assert.equal(exp.shown, null);
    assert.equal(exp.error?.type, "review_failed");
    assert.match(exp.reason!, /UnsafePattern: patterns\[0\] .* a repeated group holds a quantifier.*review_failed/);
    const poly = await call(core, `poly ${LONG} ${AWS_SECRET}`);
    assert.equal(poly.decision, "block");
    assert.equal(poly.shown, null);
    assert.match(poly.reason!, /PolicyTimeout: review patterns did not settle within 3000 ms/);
    // The worker stopped at the timeout is started again for the next result.
    const plain = await call(core, `plain ${AWS_SECRET}`);
    assert.deepEqual([plain.decision, plain.shown], ["redact", "plain [REDACTED]"], JSON.stringify(plain.error));
    const r = await core.finish();
    const reviews = reviewsOf(r.episode_dir);
    assert.deepEqual(reviews.map((p) => [p.decision, p.error?.type ?? null]), [
      ["block", "review_failed"],
      ["block", "review_failed"],
      ["redact", null],
    ]);
    assert.ok(!JSON.stringify(reviews).includes(AWS_SECRET), "no review record carries the secret");
    assert.deepEqual(validate(r.episode_dir).problems, []);
  });

  test("a policy in this thread (an object): its patterns run in a worker of their own, bounded the same", {
    timeout: 120_000,
  }, async () => {
    const review = (st: any) => {
      const x = JSON.stringify(st.result.output);
      return { kind: "redact", advice: "m", patterns: [x.includes("poly") ? POLYNOMIAL : EXPONENTIAL] };
    };
    const core = await EpisodeCore.open("in thread", {
      root,
      using: "claude-code",
      policies: [{ name: "Obj", version: "1.0", review }] as any,
      policy_timeout_ms: 1500,
    });
    const refused = await call(core, `${LONG}c ${AWS_SECRET}`);
    assert.deepEqual([refused.decision, refused.shown, refused.error?.type], ["block", null, "review_failed"]);
    assert.match(refused.reason!, /UnsafePattern/);
    // Without the worker this would run in noema's own thread for ever: the timeout stops it.
    const slow = await call(core, `poly ${LONG} ${AWS_SECRET}`);
    assert.deepEqual([slow.decision, slow.shown, slow.error?.type], ["block", null, "review_failed"]);
    assert.match(slow.reason!, /PolicyTimeout: review patterns did not settle within 1500 ms/);
    await core.finish();
  });
});

describe("the llm agent's governor (PolicyGovernor) fails closed the same way", () => {
  test(
    "a policy file's pattern past the timeout, a refused one: blocked, never shown",
    { timeout: 120_000 },
    async () => {
      const governor = await PolicyGovernor.create({ policies: [GREEDY], policy_timeout_ms: 1500 });
      try {
        const review = async (id: string, output: string) => {
          await governor.propose({ kind: "tool", tool: "shell", input: { command: "cat log" }, call_id: id });
          return (await governor.record(id, { status: "ok", output } as any))!;
        };
        // The refused one first: after the timeout, the next call starts a new worker (slow on a busy machine).
        const exp = await review("g1", `exp ${LONG}c ${AWS_SECRET}`);
        assert.deepEqual([exp.decision, exp.shown, exp.error?.type], ["block", null, "review_failed"]);
        const poly = await review("g2", `poly ${LONG} ${AWS_SECRET}`);
        assert.deepEqual([poly.decision, poly.shown, poly.error?.type], ["block", null, "review_failed"]);
        assert.match(poly.reason!, /PolicyTimeout: review patterns did not settle within 1500 ms/);
      } finally {
        governor.close();
      }
    },
  );
});

describe("through the CLI", () => {
  const log = join(tmp.path, "log.txt");

  test("noema run --using shell: the run stops vetoed, the review records review_failed", { timeout: 120_000 }, () => {
    // The shell adapter keeps the output's last 4 KiB: the marker goes at the end.
    writeFileSync(log, `${LONG} aws_secret_access_key = ${AWS_SECRET} poly\n`);
    const r = cli(
      ["run", "print", "--using", "shell", "--policy", GREEDY, "--policy-timeout", "1500", "--root", root, "--json"]
        .concat(["--", "cat", log]),
      { cwd: REPO },
    );
    assert.equal(r.code, 3, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.status, "vetoed");
    const failed = reviewsOf(out.episode_dir).filter((p) => p.error?.type === "review_failed");
    assert.equal(failed.length, 1);
    assert.equal(failed[0].decision, "block");
    assert.equal(failed[0].shown, undefined);
    assert.match(failed[0].message, /did not settle within 1500 ms.*review_failed/);
  });

  test("noema hook claude-code: PostToolUse answers block, never the output unmasked", { timeout: 120_000 }, () => {
    const ws = join(tmp.path, "ws");
    const hook = (event: Record<string, unknown>) =>
      cli(["hook", "claude-code", "--root", root, "--workspace", tmp.path, "--no-finish", "--policy", GREEDY], {
        input: JSON.stringify({ session_id: "s-review", cwd: ws, ...event }),
        env: { NOEMA_HOOK_SERVER: "0" },
      });
    const tool = { tool_name: "Bash", tool_input: { command: "cat log" }, tool_use_id: "toolu_x1" };
    assert.equal(hook({ hook_event_name: "UserPromptSubmit", prompt: "read the log" }).code, 0);
    assert.equal(hook({ hook_event_name: "PreToolUse", ...tool }).code, 0);
    const post = hook({
      hook_event_name: "PostToolUse",
      ...tool,
      tool_response: { stdout: `exp ${LONG}c ${AWS_SECRET}`, stderr: "", interrupted: false },
    });
    assert.equal(post.code, 0, post.stderr);
    assert.ok(!post.stdout.includes(AWS_SECRET), "the answer never carries the secret");
    const answer = JSON.parse(post.stdout);
    assert.equal(answer.decision, "block");
    assert.match(answer.reason, /review_failed/);
  });
});
