/**
 * `trace.learn_proposals`: the learning counts and ids of an episode agree
 * with `learn.jsonl`.
 *
 * - A `learn` event of form A (pointer) has `proposal_count` equal to the
 *   length of its `proposal_ids`.
 * - When form A events point at the episode's `learn.jsonl`, the proposal ids
 *   they list (together) are exactly the `proposal_id`s of the proposals in
 *   `learn.jsonl` (`payload.proposal[]` of each line, as `learn/1.0` has it):
 *   one it lists that the file lacks is reported on the event's line, one the
 *   file has that no event lists on the file's line.
 * - `summary.json` `metrics.learn_proposals` is the number of those ids, and
 *   `metrics.learn_applied` the sum of the events' `applied_count`.
 *
 * Without a form A event (learning off, or the legacy inline form B) nothing
 * claims a count, and nothing is compared. Memory: the ids, not the lines.
 *
 * @module
 */
import { join, normalize } from "node:path";
import { ARTIFACTS } from "../store/layout.ts";
import { type Collector, display } from "./collector.ts";

type Json = Record<string, unknown>;

/** One form A learn event, as the rule keeps it. */
interface PointerEvent {
  line: number;
  /** Whether it points at the episode's learn.jsonl. */
  here: boolean;
  ids: string[];
  appliedCount: number | undefined;
}

/**
 * The learn events and `learn.jsonl` proposals of one episode, gathered while
 * the files stream by, then checked ({@link LearnTrace.check}).
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * import { LearnTrace } from "./learn_rules.ts";
 * const t = new LearnTrace();
 * const c = new Collector(10);
 * t.event(c, "events.jsonl", { learn_path: "learn.jsonl", proposal_count: 1, proposal_ids: ["p1"] }, 9);
 * t.check(c, "/ep", null);
 * c.problems[0].message; // 'proposal_ids: "p1" is not a proposal in learn.jsonl'
 * ```
 */
export class LearnTrace {
  #events: PointerEvent[] = [];
  /** Proposal id → the learn.jsonl line it is on (the first). */
  #proposals = new Map<string, number>();

  /**
   * Feeds one `learn` event's payload and its line in `file` (events.jsonl as shown): form A events are kept (a
   * `proposal_count` that is not the length of `proposal_ids` is reported at once), others are ignored.
   */
  event(c: Collector, file: string, payload: Json, line: number): void {
    const { learn_path: path, proposal_count: count, proposal_ids: ids, applied_count: applied } = payload;
    if (typeof path !== "string" || !Array.isArray(ids)) return;
    const strings = ids.filter((x): x is string => typeof x === "string");
    if (typeof count === "number" && count !== ids.length) {
      c.add(
        file,
        "trace.learn_proposals",
        `payload.proposal_count: ${count}, but proposal_ids lists ${ids.length} proposals`,
        line,
      );
    }
    this.#events.push({
      line,
      here: normalize(path) === ARTIFACTS.learn,
      ids: strings,
      appliedCount: typeof applied === "number" ? applied : undefined,
    });
  }

  /** Feeds one parsed `learn.jsonl` line and its line number. */
  learnLine(value: Json, line: number): void {
    const payload = value.payload;
    const proposals = typeof payload === "object" && payload !== null ? (payload as Json).proposal : undefined;
    if (!Array.isArray(proposals)) return;
    for (const p of proposals) {
      const id = typeof p === "object" && p !== null ? (p as Json).proposal_id : undefined;
      if (typeof id === "string" && !this.#proposals.has(id)) this.#proposals.set(id, line);
    }
  }

  /** Reports what disagrees (see the module doc); `summary` is the parsed summary.json, if any. */
  check(c: Collector, dir: string, summary: Json | null): void {
    const here = this.#events.filter((e) => e.here);
    if (here.length === 0) return;
    const eventsFile = display(join(dir, ARTIFACTS.events));
    const learnFile = display(join(dir, ARTIFACTS.learn));
    const listed = new Set<string>();
    for (const e of here) {
      for (const id of e.ids) {
        listed.add(id);
        if (!this.#proposals.has(id)) {
          c.add(
            eventsFile,
            "trace.learn_proposals",
            `proposal_ids: ${JSON.stringify(id)} is not a proposal in learn.jsonl`,
            e.line,
          );
        }
      }
    }
    for (const [id, line] of this.#proposals) {
      if (!listed.has(id)) {
        c.add(
          learnFile,
          "trace.learn_proposals",
          `proposal ${JSON.stringify(id)}: no learn event lists it in proposal_ids`,
          line,
        );
      }
    }
    const metrics = summary?.metrics;
    if (typeof metrics !== "object" || metrics === null) return;
    const { learn_proposals: proposals, learn_applied: applied } = metrics as Json;
    const summaryFile = display(join(dir, ARTIFACTS.summary));
    if (typeof proposals === "number" && proposals !== listed.size) {
      c.add(
        summaryFile,
        "trace.learn_proposals",
        `metrics.learn_proposals: ${proposals}, but the learn events list ${listed.size} proposals of learn.jsonl`,
      );
    }
    const counted = here.filter((e) => e.appliedCount !== undefined);
    const sum = counted.reduce((n, e) => n + e.appliedCount!, 0);
    if (typeof applied === "number" && counted.length > 0 && applied !== sum) {
      c.add(
        summaryFile,
        "trace.learn_proposals",
        `metrics.learn_applied: ${applied}, but the learn events' applied_count says ${sum}`,
      );
    }
  }
}
