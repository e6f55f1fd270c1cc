/**
 * A policy file whose call timed out runs in a new worker from the next
 * call on: the worker starts again and the policy loads again there
 * before that call's own timeout starts, so a slow reload (a large policy,
 * Deno compiling it, a loaded machine) does not make the next call time out
 * too.
 *
 * @module
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { run, validateEpisodeDir } from "noema";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-policy-restart-");
after(() => tmp.cleanup());

/** A policy whose every load after the first takes `reloadMs` (a busy top level), and whose first call hangs. */
function slowReloadPolicy(dir: string, reloadMs: number): string {
  const mark = join(dir, "loaded-once");
  return tmp.file(
    "slow-reload.ts",
    `import { existsSync, writeFileSync } from "node:fs";
const MARK = ${JSON.stringify(mark)};
if (existsSync(MARK)) {
  const end = Date.now() + ${reloadMs};
  while (Date.now() < end) {} // loading again takes longer than a call may
} else writeFileSync(MARK, "");
export default {
  name: "SlowReload",
  version: "1.0",
  advise(s) {
    if (s.step.index === 0) return new Promise(() => {}); // the first call never settles
    return { kind: "hint", advice: "seen " + s.step.id };
  },
};
`,
  );
}

test("after a timeout, the policy reloads outside the next call's timeout: that call is answered", {
  timeout: 120_000,
}, async () => {
  const policy = slowReloadPolicy(tmp.path, 3000);
  const r = await run("three steps", {
    root: join(tmp.path, "root"),
    using: "scripted",
    adapter: { script: tmp.file("script.json", JSON.stringify({ results: [], default: { status: "ok" } })) },
    policies: [policy],
    policy_timeout_ms: 2000,
    failure_policy: "fail_open", // the timed-out first step goes on, so the next calls are made
    learn_mode: "off",
    steps: [0, 1, 2].map((i) => ({ kind: "act" as const, description: `step ${i}`, inputs: { n: i } })),
  });
  assert.ok(existsSync(join(tmp.path, "loaded-once")), "the policy loaded");
  const dirs = readFileSync(join(r.episode_dir, "events.jsonl"), "utf8").split("\n").filter(Boolean)
    .map((l) => JSON.parse(l)).filter((e) => e.phase === "direction").map((e) => e.payload);
  assert.deepEqual(
    dirs.map((d) => [d.step_id, d.error?.type ?? null, d.advice]),
    [["step-1", "PolicyTimeout", null], ["step-2", null, "seen step-2"], ["step-3", null, "seen step-3"]],
  );
  assert.equal(r.status, "ok");
  assert.equal(validateEpisodeDir(r.episode_dir).valid, true);
});
