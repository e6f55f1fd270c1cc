// Tests of the NoForcePush policy: no noema runtime needed, just call advise() on a frozen state.
//   bun test no-force-push.test.ts      or      deno test -A no-force-push.test.ts
import { test } from "node:test";
import assert from "node:assert/strict";
import { deepFreeze, type PolicyState } from "noema";
import NoForcePush from "./no-force-push.ts";

/** The state noema passes to advise() when a step is about to run `command`. */
function stateFor(command: string): PolicyState {
  const step = { id: "step-2", kind: "act", description: "run a command", inputs: { command } } as const;
  return deepFreeze({
    version: "1.0",
    state_schema_version: "1.0.0",
    episode: { id: "ep_test", started_at: "2026-01-01T00:00:00.000Z", intuition_mode: "interventive" },
    goal: { task: "tidy up" },
    beliefs: [],
    plan: { steps: [{ ...step, status: "pending" }] },
    memory: { facts: [] },
    outcomes: { status: "pending", actions: [], error: null },
    links: { events: "events.jsonl", learn: "learn.jsonl" },
    step: { ...step, index: 0, total: 1 },
    action: { kind: "shell", tool: "adapter:shell", input: { command }, command },
    workspace: null,
  } as const);
}

test("vetoes a destructive command", () => {
  const verdict = new NoForcePush().advise(stateFor("rm -rf /"));
  assert.equal(verdict?.kind, "veto");
  assert.ok((verdict?.confidence ?? 0) >= 0.9);
});

test("rewrites a force push into a push with lease", () => {
  const verdict = new NoForcePush().advise(stateFor("git push origin main --force"));
  assert.equal(verdict?.kind, "intervention");
  assert.deepEqual(verdict?.patch, { command: "git push origin main --force-with-lease", argv: null });
});

test("hints on sudo", () => {
  assert.equal(new NoForcePush().advise(stateFor("sudo apt-get update"))?.kind, "hint");
});

test("has no opinion on an ordinary command", () => {
  assert.equal(new NoForcePush().advise(stateFor("ls -la")), undefined);
});

test("never changes the state it is given", () => {
  const state = stateFor("git push --force");
  new NoForcePush().advise(state);
  assert.equal(state.action.input.command, "git push --force");
});
