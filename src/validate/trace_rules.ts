/**
 * Traceability rules of `noema validate` that need facts gathered while the
 * events stream by ({@link EventTrace}):
 *
 * - `trace.plan`: a terminal run's `state.json` `plan` equals the plan
 *   rebuilt from the events by the contract's "Plan reconstruction" rules
 *   (the latest `plan` event, then later `act` events' `step_status`): its
 *   step ids and step statuses, and its `source` and `updated_at` when it has
 *   them (both are optional; their absence is a `noema.plan_fields` warning
 *   of the `noema` profile). A non-terminal run is not checked: its latest
 *   steps may not be announced yet.
 * - `trace.directory`: the episode directory is named by the episode's id
 *   (the contract's path shape `.<tool_dir>/episodes/<episode_id>/`): the id
 *   in `state.json` `episode.id`, or, without one, the first event's
 *   `episode_id`. A renamed or copied directory is reported.
 *
 * Memory: the trace keeps the latest plan (as `state.json` does), not the
 * events.
 *
 * @module
 */
import { basename, join } from "node:path";
import { STEP_STATUSES, type StepStatus } from "../schema/plan.ts";
import { ARTIFACTS } from "../store/layout.ts";
import { type Collector, display } from "./collector.ts";
import { piecesOf } from "./compact.ts";

type Json = Record<string, unknown>;

/**
 * What the contract's plan reconstruction gives, reduced to what `trace.plan`
 * compares: the latest `plan` event's `source` (else its `agent_id`) and
 * timestamp, its step ids in order, and each step's status after the later
 * `act` events.
 */
export interface RebuiltPlan {
  source: string | undefined;
  updated_at: string | undefined;
  ids: readonly string[];
  statuses: readonly string[];
}

/**
 * What the event scan gathers for these rules: fed every parsed event, in
 * file order. The plan is rebuilt by the rules `read/plan.ts` applies
 * (`step_records`, else legacy `<kind>:<description>` labels; a record
 * without a string id is `step-<n>`, without a known status `pending`), but
 * only ids and statuses are kept, so that a 100,000-step plan costs little
 * memory next to the event line that announced it.
 *
 * @example
 * ```ts
 * import { EventTrace } from "./trace_rules.ts";
 * const t = new EventTrace();
 * t.add({ episode_id: "ep_1", phase: "plan", timestamp: "2026-01-01T00:00:00Z", payload: { steps: ["act:x"] } }, 2);
 * t.plan()?.ids; // ["step-1"]
 * t.firstEpisodeId; // { id: "ep_1", line: 2 }
 * ```
 */
export class EventTrace {
  #plan: { source: string | undefined; updated_at: string | undefined; ids: string[]; statuses: string[] } | null =
    null;
  #index = new Map<string, number>();
  /** The line of the latest `plan` event, or null when none was seen. */
  planLine: number | null = null;
  /** The first event's `episode_id` (when it is a string) and its line. */
  firstEpisodeId: { id: string; line: number } | null = null;
  #seen = false;

  /** Feeds one parsed event (an object) and its line. */
  add(event: Json, line: number): void {
    if (!this.#seen) {
      this.#seen = true;
      if (typeof event.episode_id === "string") this.firstEpisodeId = { id: event.episode_id, line };
    }
    const payload = typeof event.payload === "object" && event.payload !== null ? event.payload as Json : {};
    if (event.phase === "plan") {
      this.planLine = line;
      this.#planEvent(event, payload);
    } else if (event.phase === "act" && this.#plan) {
      const { step_id: id, step_status: status } = payload;
      const i = typeof id === "string" && typeof status === "string" ? this.#index.get(id) : undefined;
      if (i !== undefined) this.#plan.statuses[i] = status as string;
    }
  }

  #planEvent(event: Json, payload: Json): void {
    const ids: string[] = [], statuses: string[] = [];
    // A large plan event was read in pieces (large.ts): its step records are kept as `{ id, status }`.
    const records = piecesOf(payload)?.records ?? payload.step_records;
    if (Array.isArray(records)) {
      records.forEach((r, i) => {
        const rec = typeof r === "object" && r !== null ? r as Json : {};
        ids.push(typeof rec.id === "string" ? rec.id : `step-${i + 1}`);
        statuses.push(STEP_STATUSES.includes(rec.status as StepStatus) ? rec.status as string : "pending");
      });
    } else if (Array.isArray(payload.steps)) {
      let n = 0;
      for (const label of payload.steps) {
        if (typeof label === "string") ids.push(`step-${++n}`), statuses.push("pending");
      }
    }
    const source = typeof payload.source === "string"
      ? payload.source
      : typeof event.agent_id === "string"
      ? event.agent_id
      : undefined;
    const updated_at = typeof event.timestamp === "string" ? event.timestamp : undefined;
    this.#plan = { source, updated_at, ids, statuses };
    this.#index = new Map(ids.map((id, i) => [id, i]));
  }

  /** The plan rebuilt so far, or null when no `plan` event was seen. */
  plan(): RebuiltPlan | null {
    return this.#plan;
  }
}

/** What {@link checkPlanTrace} and {@link checkDirectoryName} read. */
export interface TraceFacts {
  dir: string;
  terminal: boolean;
  state: Json | null;
  trace: EventTrace | null;
}

const show = (x: unknown) => (x === undefined ? "absent" : JSON.stringify(x));

/**
 * How a `state.json` plan differs from the plan rebuilt from the events: one
 * message per difference, naming the field (and step id) and both values.
 *
 * @example
 * ```ts
 * import { planDifferences } from "./trace_rules.ts";
 * planDifferences(
 *   { steps: [{ id: "step-1", kind: "act", description: "x", status: "done" }], source: "a" },
 *   { source: "a", updated_at: undefined, ids: ["step-1"], statuses: ["failed"] },
 * ); // ['plan.steps[0] (step-1).status: state.json says "done", the events say "failed"']
 * ```
 */
export function planDifferences(state: Json, rebuilt: RebuiltPlan): string[] {
  const out: string[] = [];
  const says = (field: string, a: unknown, b: unknown) =>
    `${field}: state.json says ${show(a)}, the events say ${show(b)}`;
  // source and updated_at are optional: absent, they are not compared (the `noema` profile warns).
  if (state.source !== undefined && state.source !== rebuilt.source) {
    out.push(says("plan.source", state.source, rebuilt.source));
  }
  if (state.updated_at !== undefined && state.updated_at !== rebuilt.updated_at) {
    out.push(says("plan.updated_at", state.updated_at, rebuilt.updated_at) + " (the latest plan event's timestamp)");
  }
  const steps = Array.isArray(state.steps) ? state.steps as Json[] : [];
  const stateAt = new Map<unknown, number>();
  steps.forEach((s, i) => stateAt.has(s?.id) || stateAt.set(s?.id, i));
  const rebuiltIds = new Set(rebuilt.ids);
  steps.forEach((s, i) => {
    if (!rebuiltIds.has(s?.id as string)) {
      out.push(`plan.steps[${i}] (${String(s?.id)}): in state.json, but not in the latest plan event`);
    }
  });
  rebuilt.ids.forEach((id, r) => {
    const i = stateAt.get(id);
    if (i === undefined) out.push(`plan.steps: step ${id} of the latest plan event is not in state.json`);
    else if (steps[i].status !== rebuilt.statuses[r]) {
      out.push(says(`plan.steps[${i}] (${id}).status`, steps[i].status, rebuilt.statuses[r]));
    }
  });
  return out;
}

/**
 * `trace.plan`: a terminal run's `state.json` plan against the plan rebuilt
 * from its events (see the module doc).
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * import { checkPlanTrace, EventTrace } from "./trace_rules.ts";
 * const c = new Collector(10);
 * const trace = new EventTrace();
 * trace.add({ phase: "plan", timestamp: "2026-01-01T00:00:00.000Z", payload: { source: "s", steps: ["act:x"] } }, 2);
 * const plan = { steps: [{ id: "step-1", kind: "act", description: "x", status: "done" }], source: "s", updated_at: "2026-01-01T00:00:00.000Z" };
 * checkPlanTrace(c, { dir: "/ep", terminal: true, state: { plan }, trace });
 * c.problems[0].message; // 'plan.steps[0] (step-1).status: state.json says "done", the events say "pending"'
 * ```
 */
export function checkPlanTrace(c: Collector, f: TraceFacts): void {
  const plan = f.state?.plan;
  if (!f.terminal || !f.trace || typeof plan !== "object" || plan === null || Array.isArray(plan)) return;
  const stateFile = display(join(f.dir, ARTIFACTS.state));
  const rebuilt = f.trace.plan();
  const steps = (plan as Json).steps;
  if (!Array.isArray(steps)) return; // a state.schema problem already
  if (!rebuilt) {
    if (steps.length > 0) {
      c.add(stateFile, "trace.plan", `plan.steps: ${steps.length} steps, but events.jsonl has no plan event`);
    }
    return;
  }
  for (const message of planDifferences(plan as Json, rebuilt)) {
    c.add(stateFile, "trace.plan", `${message} (plan event on events.jsonl line ${f.trace.planLine})`);
  }
  const absent = ["source", "updated_at"].filter((k) => (plan as Json)[k] === undefined);
  if (absent.length > 0) {
    c.warn(
      stateFile,
      "noema.plan_fields",
      `plan: lacks ${absent.join(" and ")} (optional in the contract; noema writes the latest plan event's)`,
    );
  }
}

/**
 * `trace.directory`: the directory's name against the episode's id (see the
 * module doc).
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * import { checkDirectoryName } from "./trace_rules.ts";
 * const c = new Collector(10);
 * checkDirectoryName(c, { dir: "/r/episodes/ep_B", terminal: true, state: { episode: { id: "ep_A" } }, trace: null });
 * c.problems[0].rule; // "trace.directory"
 * ```
 */
export function checkDirectoryName(c: Collector, f: TraceFacts): void {
  const name = basename(f.dir);
  const stateId = (f.state?.episode as Json | undefined)?.id;
  if (typeof stateId === "string") {
    if (stateId !== name) {
      c.add(
        display(join(f.dir, ARTIFACTS.state)),
        "trace.directory",
        `episode.id: ${JSON.stringify(stateId)}, but the episode directory is named ${
          JSON.stringify(name)
        } (a renamed or copied episode; the directory is named by the id)`,
      );
    }
    return;
  }
  const first = f.trace?.firstEpisodeId;
  if (first && first.id !== name) {
    c.add(
      display(join(f.dir, ARTIFACTS.events)),
      "trace.directory",
      `episode_id: ${JSON.stringify(first.id)}, but the episode directory is named ${
        JSON.stringify(name)
      } (a renamed or copied episode; the directory is named by the id)`,
      first.line,
    );
  }
}
