/**
 * `validate` strictness (issue 11 §4): a section that is present must carry
 * its required fields; `flags.mode: "minimal"` excludes `insight` and
 * `flags.direction`; act events without `action_id` are matched to
 * `outcomes.actions` by step and timestamp, with no false positive.
 *
 * Episodes are built with the fixture generator (scripts/make-fixtures.ts),
 * so the manifest stays consistent with every mutation.
 *
 * @module
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { buildFixture, type EpisodeModel } from "../scripts/make-fixtures.ts";
import { RULES } from "../src/validate/rules.ts";
import { validateEpisodeDir } from "../src/validate/validate.ts";
import { tempDir } from "./helpers/tmp.ts";

type Json = Record<string, unknown>;
const tmp = tempDir("noema-strict-");
after(() => tmp.cleanup());
let n = 0;

/** Builds the base terminal story, mutated, into a temp dir; returns its problems as `rule file:path`. */
function problems(mutate: (m: EpisodeModel) => void): string[] {
  const dir = join(tmp.path, `ep_${n++}`);
  const built = buildFixture({ dir: "x", description: "", mutate });
  for (const [name, bytes] of built.files) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), bytes);
  }
  return validateEpisodeDir(dir).problems.map((p) => `${p.rule} ${p.message}`);
}

const acts = (m: EpisodeModel) => m.events.filter((e) => e.phase === "act");

describe("present sections carry their required fields", () => {
  const cases: [string, (m: EpisodeModel) => void, RegExp][] = [
    ["state episode without id", (m) => void delete (m.state.episode as Json).id, /^state\.schema episode\.id:/],
    ["state episode {}", (m) => void (m.state.episode = {}), /^state\.schema episode\.(id|started_at):/],
    ["state goal without task", (m) => void delete (m.state.goal as Json).task, /^state\.schema goal\.task:/],
    ["state plan without steps", (m) => void delete (m.state.plan as Json).steps, /^state\.schema plan\.steps:/],
    ["summary flags without mode", (m) => void delete (m.summary!.flags as Json).mode, /^summary\.schema flags\.mode:/],
    ["summary flags {}", (m) => void (m.summary!.flags = {}), /^summary\.schema flags\.(intuition|mode):/],
    [
      "summary metrics without veto_count",
      (m) => void delete (m.summary!.metrics as Json).veto_count,
      /^summary\.schema metrics\.veto_count:/,
    ],
    [
      "summary verification without provided",
      (m) => void delete (m.summary!.verification as Json).provided,
      /^summary\.schema verification\.provided:/,
    ],
  ];
  for (const [what, mutate, want] of cases) {
    test(what, () => {
      const got = problems(mutate);
      assert.ok(got.some((p) => want.test(p)), got.join("\n"));
    });
  }
});

describe('flags.mode "minimal" excludes the meta-mode blocks', () => {
  test("the rule is listed", () => assert.ok("summary.mode" in RULES));

  test("minimal with insight", () => {
    const got = problems((m) => {
      (m.summary!.flags as Json).mode = "minimal";
      delete (m.summary!.flags as Json).direction;
    });
    assert.deepEqual(got, ['summary.mode insight: present, but flags.mode is "minimal" (meta mode only)']);
  });

  test("minimal with flags.direction", () => {
    const got = problems((m) => {
      (m.summary!.flags as Json).mode = "minimal";
      delete m.summary!.insight;
    });
    assert.deepEqual(got, ['summary.mode flags.direction: present, but flags.mode is "minimal" (meta mode only)']);
  });

  test("meta with both, and minimal with neither, are fine", () => {
    assert.deepEqual(problems(() => {}), []);
    assert.deepEqual(
      problems((m) => {
        (m.summary!.flags as Json).mode = "minimal";
        delete (m.summary!.flags as Json).direction;
        delete m.summary!.insight;
      }),
      [],
    );
  });
});

describe("act events without action_id", () => {
  test("are matched to outcomes.actions by step and timestamp: no false positive", () => {
    const got = problems((m) => {
      for (const e of acts(m)) delete (e.payload as Json).action_id;
    });
    assert.deepEqual(got, []);
  });

  test("an action whose act event (no action_id) has another timestamp is reported", () => {
    const got = problems((m) => {
      for (const e of acts(m)) delete (e.payload as Json).action_id;
      const a = ((m.state.outcomes as Json).actions as Json[])[1];
      a.timestamp = new Date(Date.parse(a.timestamp as string) + 1).toISOString();
    });
    assert.equal(got.length, 1, got.join("\n"));
    assert.match(got[0], /^trace\.action_timestamp outcomes\.actions: action \S+ has no act event/);
  });

  test("two actions of one step at one timestamp each take one act event", () => {
    const got = problems((m) => {
      const [a, b] = acts(m);
      for (const e of [a, b]) delete (e.payload as Json).action_id;
      (b.payload as Json).step_id = (a.payload as Json).step_id;
      b.timestamp = a.timestamp;
      const [x, y] = (m.state.outcomes as Json).actions as Json[];
      y.step_id = x.step_id;
      y.timestamp = x.timestamp;
    });
    assert.ok(!got.some((p) => p.startsWith("trace.action_timestamp")), got.join("\n"));
  });
});
