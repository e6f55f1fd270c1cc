// Tests of the echo-agent adapter: create it and call act() directly, no noema runtime needed.
//   bun test echo-agent.test.ts      or      deno test -A echo-agent.test.ts
import { test } from "node:test";
import assert from "node:assert/strict";
import type { ActRequest, AdapterContext } from "noema";
import adapter from "./echo-agent.ts";

const context: AdapterContext = { config: {}, args: [], workspace: null, episode_dir: ".", secrets: [] };

/** The request noema sends for one step. */
function requestFor(inputs: Record<string, unknown>): ActRequest {
  return {
    episode_id: "ep_test",
    task: "try it",
    step: { id: "step-1", kind: "act", description: "do something", inputs },
    action: { kind: "adapter", tool: "adapter:echo-agent", input: inputs },
    hints: ["be careful"],
    workspace: null,
    signal: new AbortController().signal,
  };
}

test("is named and declares the plugin API", () => {
  assert.equal(adapter.name, "echo-agent");
  assert.equal(adapter.api?.split(".")[0], "1");
});

test("completes a step and remembers a fact", async () => {
  const instance = await adapter.create(context);
  const result = await instance.act(requestFor({ what: "x" }));
  assert.equal(result.status, "ok");
  assert.match(result.outcome ?? "", /step step-1 done/);
  assert.deepEqual(result.facts, [{ key: "echo-agent.steps_done", value: 1 }]);
  await instance.close?.();
});

test("reports an error when the step asks to fail", async () => {
  const instance = await adapter.create(context);
  const result = await instance.act(requestFor({ fail: true }));
  assert.equal(result.status, "error");
  assert.equal(result.error?.type, "requested_failure");
});
