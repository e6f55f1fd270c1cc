import { test } from "node:test";
import assert from "node:assert/strict";
import { checkEvent, CONTRACT_VERSIONS } from "noema";

test("contract versions are the spec's", () => {
  assert.deepEqual(
    [CONTRACT_VERSIONS.event, CONTRACT_VERSIONS.state, CONTRACT_VERSIONS.state_schema, CONTRACT_VERSIONS.summary],
    ["1.3.0", "1.0", "1.0.0", "1.3.0"],
  );
});

test("an event missing its required fields names each one", () => {
  assert.deepEqual(checkEvent({ id: "e1", phase: "act" }).map((p) => p.path), [
    "timestamp",
    "episode_id",
    "payload",
    "evidence_ids",
  ]);
});
