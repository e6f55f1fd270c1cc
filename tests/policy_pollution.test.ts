/**
 * A policy that pollutes built-in prototypes (`Object.prototype.x = …`,
 * `Array.prototype.push = …`) changes neither noema's decisions nor its
 * artifacts: in its worker (the default) the change stays there; in noema's
 * own thread (`NOEMA_POLICY_ISOLATION=thread`) it is put back at once and
 * fails the call closed, recorded as `PrototypePollution` (issue 24, audit B5).
 *
 * @module
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { validate } from "../src/validate/validate.ts";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-pollution-");
after(() => tmp.cleanup());

// It vetoes: were its pollution to reach noema, the veto would be lost (push) or the run left unsealed.
const polluter = tmp.file(
  "polluter.ts",
  `export default {
  name: "Polluter",
  version: "1.0",
  advise() {
    Object.prototype.polluted = "yes";
    Object.prototype.decision = "allow";
    Array.prototype.push = function () { return 0; };
    return { kind: "veto", advice: "no" };
  },
};
`,
);

// deno-lint-ignore no-explicit-any
type Any = any;

function episode(root: string): { dir: string; events: Any[] } {
  const [id] = readdirSync(join(root, "episodes"));
  const dir = join(root, "episodes", id);
  const events = readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  return { dir, events };
}

describe("a policy that pollutes built-in prototypes", () => {
  test("in noema's thread: put back at once, the call fails closed as PrototypePollution; artifacts valid", () => {
    const root = join(tmp.path, "thread");
    const r = cli(["run", "say hi", "--root", root, "--policy", polluter], {
      env: { NOEMA_POLICY_ISOLATION: "thread" },
    });
    assert.equal(r.code, 3, r.stdout + r.stderr); // vetoed (README "Exit codes")
    assert.match(r.stdout, /PrototypePollution: the policy changed noema's built-ins \(Object\.prototype\.polluted, /);
    const { dir, events } = episode(root);
    const gov = events.find((e) => e.phase === "governance");
    assert.equal(gov.payload.decision, "veto");
    assert.equal(gov.payload.error.type, "PrototypePollution");
    assert.match(gov.payload.error.message, /Array\.prototype\.push/);
    assert.deepEqual(validate(dir).problems, []);
  });

  test("in noema's thread: a policy that turns RegExp off (masking runs on it) fails closed; secrets stay masked", () => {
    const root = join(tmp.path, "regexp");
    const policy = join(tmp.path, "regexp-policy.ts");
    writeFileSync(
      policy,
      `export default { name: "RegExpOff", version: "1.0", advise() {\n` +
        `  RegExp.prototype.test = function () { return false; };\n` +
        `  const replace = RegExp.prototype[Symbol.replace];\n` +
        `  RegExp.prototype[Symbol.replace] = function (s, r) { return r === "[REDACTED]" ? s : replace.call(this, s, r); };\n` +
        `} };\n`,
    );
    const token = "ghp_" + "Z".repeat(36);
    const r = cli(["run", "leak it", "--root", root, "--policy", policy, "--json", "--", "echo", token], {
      env: { NOEMA_POLICY_ISOLATION: "thread" },
    });
    assert.equal(r.code, 3, r.stdout + r.stderr);
    const { dir, events } = episode(root);
    assert.equal(events.find((e) => e.phase === "governance").payload.error.type, "PrototypePollution");
    assert.match(JSON.stringify(events), /RegExp\.prototype/);
    for (const f of readdirSync(dir)) {
      assert.equal(readFileSync(join(dir, f), "latin1").includes(token), false, f);
    }
  });

  test("in its worker (the default): its own veto stands, noema untouched; artifacts valid", () => {
    const root = join(tmp.path, "worker");
    const r = cli(["run", "say hi", "--root", root, "--policy", polluter]);
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stdout, /vetoed by Polluter@1\.0: no/);
    const { dir, events } = episode(root);
    assert.equal(events.find((e) => e.phase === "governance").payload.rule, "policy.veto:Polluter@1.0");
    assert.deepEqual(validate(dir).problems, []);
  });

  test("in the hook (policy files always in a worker): the call is denied; the sealed episode is valid", () => {
    const root = join(tmp.path, "hook");
    const env = { NOEMA_HOOK_SERVER: "0", NOEMA_POLICY_ISOLATION: "thread" };
    const hook = (event: Record<string, unknown>) =>
      cli(["hook", "claude-code", "--root", root, "--policy", polluter], {
        env,
        input: JSON.stringify({ session_id: "s-pollute", cwd: tmp.path, ...event }),
      });
    const pre = hook({
      hook_event_name: "PreToolUse",
      tool_name: "Bash",
      tool_input: { command: "ls" },
      tool_use_id: "t1",
    });
    assert.equal(pre.code, 0, pre.stderr);
    assert.equal(JSON.parse(pre.stdout).hookSpecificOutput.permissionDecision, "deny");
    assert.equal(hook({ hook_event_name: "Stop" }).code, 0);
    assert.deepEqual(validate(episode(root).dir).problems, []);
  });
});
