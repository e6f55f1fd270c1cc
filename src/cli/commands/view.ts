/**
 * `noema view <episode>`: a readable dashboard of one episode (header, plan,
 * actions, verification, metrics, policy verdicts, timeline, artifacts), or
 * with `--json` one object with everything it shows.
 *
 * @module
 */
import { calledAs } from "../../called_as.ts";
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { existsSync, statSync } from "node:fs";
import { NoemaError } from "../../errors.ts";
import { episodePaths } from "../../read/episode.ts";
import type { EpisodeLocation } from "../../store/layout.ts";
import { locateEpisodeRef } from "../episode_ref.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { buildEpisodeView, type EpisodeView, TIMELINE_LENGTH, type Verdict } from "../episode_view.ts";
import { type RunState, statusWord } from "../../read/list.ts";
import { formatMs, msBetween, statusStyle } from "../format.ts";
import { type Cell, indentedLines, neutralize, oneLine, type Output, truncate } from "../output.ts";
import { renderSteps } from "./plan.ts";
import { sealingNote } from "../../read/sealing.ts";
import { tailHeading } from "../../read/stderr_tail.ts";
import { decisionText } from "../../read/step_decisions.ts";
import { ownEntry } from "../../json.ts";

const rec = (x: unknown): Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x) ? x as Record<string, unknown> : {};
/** A string field for display (control characters neutralised), or null. */
const str = (x: unknown): string | null => (typeof x === "string" ? neutralize(x) : null);
const show = (
  x: unknown,
): string => (x === null || x === undefined ? "-" : typeof x === "string" ? neutralize(x) : JSON.stringify(x));

/** What the header says about a run that has no summary.json, by run state. */
const RUN_STATE_NOTE: Partial<Record<RunState, string>> = {
  running: "running",
  waiting_for_approval: "waiting for approval",
  paused: "paused (resumable: noema resume)",
  idle: "idle (an agent session between two hook calls: its next call continues it; noema resume --abort ends it)",
  crashed: "crashed (no live process, no checkpoint; noema resume recovers it)",
};

/** `1 veto`, `2 vetoes`: a count with its noun in the right number. */
function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** Most actions and verdicts listed before "… N earlier" is shown. */
const MAX_ROWS = 20;

function section(out: Output, title: string, note = ""): void {
  out.line();
  out.line(`${out.color.bold(title)}${note ? out.color.dim(`  ${note}`) : ""}`);
}

function kv(out: Output, pairs: [string, string | null][]): void {
  const items = pairs.filter((p): p is [string, string] => p[1] !== null);
  const w = Math.max(...items.map(([k]) => k.length));
  for (const [k, v] of items) out.line(`  ${out.color.dim(k.padEnd(w))}  ${v}`);
}

function header(out: Output, v: EpisodeView): void {
  const c = out.color;
  const s = v.summary ?? {};
  const st = v.state ?? {};
  const episode = rec(st.episode);
  const flags = rec(s.flags);
  const outcome = str(s.outcome);
  const statusText = neutralize(statusWord(v));
  const styleKey = v.run_state === "terminal" ? v.status : v.run_state;
  if (v.tampered?.length) {
    const n = v.tampered.length, first = v.tampered[0];
    out.line(
      c.red(
        `! files do not match manifest.json (tampered or damaged since the run sealed): ${neutralize(first.file)}: ${
          oneLine(first.message)
        }${n > 1 ? ` (and ${n - 1} more)` : ""}; see noema verify ${neutralize(v.episode_id)}`,
      ),
    );
  }
  out.line(
    `${c.bold("Episode")} ${c.cyan(neutralize(v.episode_id))}  ${statusStyle(styleKey, c)(statusText)}` +
      (outcome ? ` · ${statusStyle(outcome, c)(outcome)}` : ""),
  );
  const task = str(rec(st.goal).task) ?? str(s.task);
  const started = str(episode.started_at) ?? str(s.started_at) ?? v.start?.timestamp ?? null;
  let duration: string | null = null;
  if (typeof s.duration_sec === "number") duration = `${s.duration_sec}s`;
  else if (v.run_state === "running" && v.elapsed_ms !== undefined) duration = `${formatMs(v.elapsed_ms)} (running)`;
  else {
    const ms = msBetween(started, v.last_event_at);
    if (ms !== null) duration = `${formatMs(ms)} so far (last event ${v.last_event_at})`;
  }
  // An absent episode.intuition_mode means advisory (the state contract's default), whatever the start event says.
  const intuitionMode = str(episode.intuition_mode) ?? "advisory";
  const intuition = typeof flags.intuition === "boolean"
    ? `${intuitionMode} (intuition ${flags.intuition ? "on" : "off"})`
    : intuitionMode;
  kv(out, [
    ["task", task === null ? "-" : oneLine(task)],
    ["started", started ?? "-"],
    ["duration", duration ?? "-"],
    ["adapter", str(episode.using) ?? str(v.start?.using) ?? "-"],
    ["mode", str(flags.mode) ?? str(v.start?.mode) ?? "-"],
    ["intuition", intuition],
    // No policy: every call was recorded, none was checked (an agent's hook installed without one, say).
    ["governance", v.start?.policies === 0 ? "ungoverned: recorded only (no policy)" : null],
    ["adapter result", str(s.adapter_result)],
    ["message", v.message !== null && v.message !== v.answer ? oneLine(v.message) : null],
  ]);
  if (v.run_state === "crashed_while_sealing") out.line(`  ${c.yellow(sealingNote(neutralize(v.episode_id)))}`);
  else if (v.lifecycle === "non-terminal") {
    const w = v.waiting;
    const why = w
      ? ` — ${neutralize(w.event_type)}${w.status ? ` (${neutralize(w.status)})` : ""}${
        w.checkpoint_id ? ` checkpoint ${neutralize(w.checkpoint_id)}` : ""
      }${w.reason ? `: ${oneLine(w.reason)}` : ""}`
      : "";
    const state = ownEntry(RUN_STATE_NOTE, v.run_state) ?? "non-terminal";
    out.line(`  ${c.yellow(`${state}: no summary.json yet${why}`)}`);
    if (w?.event_type === "run.checkpoint" && w.pending) {
      const action = w.pending.action as { kind?: unknown; input?: unknown } | undefined;
      out.line(
        `  ${c.yellow("waiting for approval")}  step ${show(w.pending.step_id)} (${show(w.pending.kind)}${
          w.pending.policy_id ? `, asked by ${show(w.pending.policy_id)}` : ""
        })`,
      );
      if (action) out.line(`  pending action  ${show(action.kind)} ${oneLine(JSON.stringify(action.input ?? {}))}`);
      out.line(c.dim(`  ${decideHint(v.episode_id, w.checkpoint_id, v.start?.using ?? null, v.run_state)}`));
    }
  }
  for (const p of v.problems) out.line(`  ${c.red(`! ${p}`)}`);
}

/**
 * The commands that decide a waiting run, bound to the checkpoint shown (a decision for a call that came after it is
 * refused). An MCP gateway's call is decided without `--resume` (the gateway waiting for it applies the decision);
 * when no gateway holds the episode any more, nothing can run the call: the episode is ended.
 */
function decideHint(id: string, checkpoint: string | null, using: string | null, state: string): string {
  const noema = calledAs();
  const at = checkpoint ? ` --checkpoint ${neutralize(checkpoint)}` : "";
  if (using === "mcp" && state !== "running") {
    return `the gateway that held this call is gone; end the episode: ${noema} resume --abort ${id}`;
  }
  const resume = using === "mcp" ? "" : " --resume";
  const note = using === "mcp" ? "  (the gateway waiting for it applies the decision)" : "";
  return `decide: ${noema} approve ${id}${at}${resume}  |  ${noema} reject ${id}${at}${resume}${note}`;
}

/** An agent run's final answer, whole. */
function answerSection(out: Output, v: EpisodeView): void {
  const answer = v.answer;
  if (answer === null) return;
  section(out, "Answer");
  for (const line of indentedLines(answer)) out.line(line);
}

function planSection(out: Output, v: EpisodeView): void {
  const plan = v.plan;
  if (!plan) {
    section(out, "Plan", "no plan event in events.jsonl");
    return;
  }
  const tally: Record<string, number> = {};
  for (const s of plan.steps) tally[s.status] = (tally[s.status] ?? 0) + 1;
  const note = [
    plan.source ? `source ${plan.source}` : null,
    `${plan.steps.length} steps: ${Object.entries(tally).map(([k, n]) => `${n} ${k}`).join(", ") || "none"}`,
  ].filter(Boolean).join(" · ");
  section(out, "Plan", note);
  const recorded = new Map<string, string>();
  const statePlan = rec(v.state?.plan);
  if (Array.isArray(statePlan.steps)) {
    for (const s of statePlan.steps.map(rec)) {
      if (typeof s.id === "string" && typeof s.status === "string") recorded.set(s.id, s.status);
    }
  }
  // Each step's latest decision; none for the step a run waits on again (an earlier decision is not this one).
  // A decider's name and note are their own words: one line each, so they cannot add lines to the plan.
  const decided = new Map((v.decisions ?? []).map((d) => [d.step_id, oneLine(decisionText(d))]));
  const waiting = v.waiting?.event_type === "run.checkpoint" ? v.waiting : null;
  if (waiting && !(v.decisions ?? []).some((d) => d.checkpoint_id === waiting.checkpoint_id)) {
    decided.delete(String(waiting.pending?.step_id ?? ""));
  }
  renderSteps(out, plan, "  ", recorded, decided);
}

function actionsSection(out: Output, v: EpisodeView): void {
  const actions = Array.isArray(rec(v.state?.outcomes).actions) ? rec(v.state?.outcomes).actions as unknown[] : [];
  section(out, "Actions", `${actions.length} in state.json · ${v.counts.actions} act events`);
  if (actions.length === 0) {
    out.line("  (none)");
    failedActions(out, v);
    return;
  }
  const c = out.color;
  const shown = actions.slice(-MAX_ROWS);
  if (actions.length > shown.length) out.line(c.dim(`  … ${actions.length - shown.length} earlier actions`));
  out.table(
    [{ header: "STEP" }, { header: "KIND" }, { header: "TOOL" }, { header: "RESULT" }, {
      header: "DURATION",
      align: "right",
    }, {
      header: "INPUT",
      flex: true,
    }],
    shown.map((raw): Cell[] => {
      const a = rec(raw);
      const result = show(a.result_status);
      return [
        show(a.step_id),
        show(a.kind),
        show(a.tool),
        { text: result, style: statusStyle(result, c) },
        typeof a.duration_ms === "number" ? formatMs(a.duration_ms) : "-",
        oneLine(show(a.input_excerpt)),
      ];
    }),
    { indent: "  " },
  );
  failedActions(out, v);
}

/** Each failed action kept (the last few): its step, error and exit code, and the tail of its stderr. */
function failedActions(out: Output, v: EpisodeView): void {
  const c = out.color;
  for (const f of v.failed_actions ?? []) {
    const exit = f.exit_code !== null && !f.error.includes(`exit code ${f.exit_code}`) ? ` (exit ${f.exit_code})` : "";
    out.line(`  ${c.red("✗")} ${neutralize(f.step_id ?? "-")} failed: ${oneLine(f.error)}${exit}`);
    if (f.stderr === null) continue;
    out.line(`    ${c.dim(`${tailHeading(f.stderr)}:`)}`);
    for (const line of f.stderr.lines) out.line(`      ${neutralize(line)}`.trimEnd());
  }
}

function verificationSection(out: Output, v: EpisodeView): void {
  const c = out.color;
  if (!v.summary) {
    section(out, "Verification", "waiting / non-terminal: available once the run ends");
    return;
  }
  section(out, "Verification");
  const ver = rec(v.summary.verification);
  const passed = ver.passed === true ? c.green("passed") : ver.passed === false ? c.red("failed") : c.dim("n/a");
  const outcome = str(v.summary.outcome) ?? "-";
  const assertions = Array.isArray(ver.assertions) ? ver.assertions.map(rec) : [];
  kv(out, [
    ["outcome", statusStyle(outcome, c)(outcome)],
    [
      "assertions",
      ver.provided === true
        ? `provided (${assertions.length}) · ${passed}${
          assertions.length
            ? ` · ${assertions.filter((a) => a.passed === true).length}/${assertions.length} passed`
            : ""
        }`
        : `not provided · ${passed}`,
    ],
  ]);
  const failing = assertions.find((a) => a.passed === false);
  if (failing) {
    const target = Array.isArray(failing.target) ? failing.target.join(", ") : show(failing.target);
    const name = str(failing.name) ?? str(failing.type) ?? str(failing.kind) ?? "assertion";
    kv(out, [[
      "first failing",
      c.red(`${name} ${target}${failing.reason ? `: ${oneLine(show(failing.reason))}` : ""}`),
    ]]);
  }
  const diff = ver.workspace_diff === null || ver.workspace_diff === undefined ? null : rec(ver.workspace_diff);
  if (diff) {
    const n = (k: string) => (Array.isArray(diff[k]) ? (diff[k] as unknown[]).length : 0);
    kv(out, [["workspace diff", `+${n("added")} added · ~${n("modified")} modified · -${n("deleted")} deleted`]]);
  }
  if (ver.error !== null && ver.error !== undefined) kv(out, [["error", c.red(show(ver.error))]]);
}

/** `metrics.tokens` of an agent run (`input`, `output`, `total`, `model_calls`) on one line, or null without it. */
function tokensText(t: Record<string, unknown>): string | null {
  if (typeof t.total !== "number") return null;
  const calls = typeof t.model_calls === "number" ? ` · ${count(t.model_calls, "model call", "model calls")}` : "";
  const cache = (typeof t.cache_read === "number" && t.cache_read > 0) ||
      (typeof t.cache_write === "number" && t.cache_write > 0)
    ? ` (cache: read ${show(t.cache_read ?? 0)}, write ${show(t.cache_write ?? 0)})`
    : "";
  return `input ${show(t.input)}${cache} · output ${show(t.output)} · total ${show(t.total)}${calls}`;
}

/** `metrics.cost`, the estimate from the price table, on one line, or null without it. */
function costText(cost: Record<string, unknown>): string | null {
  if (!("usd" in cost)) return null;
  return typeof cost.usd === "number" ? `$${cost.usd} (estimate)` : `unknown: ${show(cost.reason)}`;
}

function metricsSection(out: Output, v: EpisodeView): void {
  if (!v.summary) {
    section(out, "Metrics", "waiting / non-terminal: available once the run ends");
    const m = rec(rec(v.state?.outcomes).metrics);
    if (Object.keys(m).length) kv(out, [["so far", Object.entries(m).map(([k, x]) => `${k} ${show(x)}`).join(" · ")]]);
    return;
  }
  section(out, "Metrics");
  const m = rec(v.summary.metrics);
  const lat = rec(m.latencies);
  const insight = rec(rec(v.summary.insight).metrics);
  const dir = rec(rec(v.summary.flags).direction);
  const ms = (x: unknown) => (typeof x === "number" ? formatMs(x) : null);
  const latencies = [
    ["first action", ms(lat.first_action_ms)],
    ["planning", ms(lat.planning_ms)],
    ["execution", ms(lat.execution_ms)],
    ["total", ms(lat.total_ms)],
  ].filter(([, x]) => x !== null).map(([k, x]) => `${k} ${x}`).join(" · ");
  kv(out, [
    ["success", show(m.success)],
    [
      "counts",
      `plan ${show(m.plan_count)} · act ${show(m.act_count)} · reflect ${show(m.reflect_count)} · veto ${
        show(m.veto_count)
      }` +
      (typeof m.would_veto_count === "number" && m.would_veto_count > 0
        ? ` · would veto ${m.would_veto_count} (audit)`
        : "") +
      (m.learn_proposals !== undefined
        ? ` · learn ${show(m.learn_proposals)} proposed / ${show(m.learn_applied ?? 0)} applied`
        : ""),
    ],
    ["latencies", latencies || null],
    ["tokens", tokensText(rec(m.tokens))],
    [
      "review",
      Object.keys(rec(m.review)).length
        ? Object.entries(rec(m.review)).map(([k, x]) => `${k} ${show(x)}`).join(" · ")
        : null,
    ],
    ["cost", costText(rec(m.cost))],
    ["direction", Object.keys(dir).length ? Object.entries(dir).map(([k, x]) => `${k} ${show(x)}`).join(" · ") : null],
    [
      "insight",
      Object.keys(insight).length ? Object.entries(insight).map(([k, x]) => `${k} ${show(x)}`).join(" · ") : null,
    ],
  ]);
}

/** ` · 1 result redacted · 1 blocked` when the policies' `review` changed results; else nothing. */
function reviewCounts(r: EpisodeView["counts"]["reviews"] | undefined): string {
  if (!r || r.redacted + r.blocked + r.hinted === 0) return "";
  const parts = [
    r.redacted > 0 ? `${r.redacted} redacted` : null,
    r.blocked > 0 ? `${r.blocked} blocked` : null,
    r.hinted > 0 ? `${r.hinted} hinted` : null,
  ].filter(Boolean);
  return ` · results: ${parts.join(", ")}`;
}

function verdictsSection(out: Output, v: EpisodeView): void {
  const c = out.color;
  section(
    out,
    "Policy verdicts",
    `${v.counts.direction} direction · ${v.counts.governance} governance · ${
      count(v.counts.vetoes, "veto", "vetoes")
    }` +
      (v.counts.approved ? ` · ${v.counts.approved} approved` : "") +
      (v.counts.rejected ? ` · ${v.counts.rejected} rejected` : "") +
      (v.counts.would_vetoes > 0 ? ` · ${v.counts.would_vetoes} would veto (audit)` : "") +
      (v.counts.policy_failures > 0
        ? ` · ${count(v.counts.policy_failures, "policy failure", "policy failures")}`
        : "") +
      reviewCounts(v.counts.reviews),
  );
  if (v.verdicts.length === 0) {
    out.line("  (none)");
    return;
  }
  const shown = v.verdicts.slice(-MAX_ROWS);
  if (v.verdicts.length > shown.length) out.line(c.dim(`  … ${v.verdicts.length - shown.length} earlier verdicts`));
  out.table(
    [
      { header: "FACULTY" },
      { header: "STEP" },
      { header: "POLICY/RULE" },
      { header: "VERDICT" },
      { header: "STATUS" },
      {
        header: "DETAIL",
        flex: true,
      },
    ],
    shown.map((x): Cell[] => {
      if (x.phase === "direction") {
        const status = x.status ?? "-";
        const detail = x.error
          ? `policy failed: ${failureText(x.error)}`
          : [x.confidence !== null ? `confidence ${x.confidence}` : null, x.reason].filter(Boolean).join(" · ");
        return [
          x.stage === "review" ? "direction (review)" : "direction",
          x.step_id ?? "-",
          x.policy ?? "-",
          x.error ? { text: "failure", style: c.red } : x.kind ?? "-",
          { text: status, style: statusStyle(status, c) },
          oneLine(detail),
        ];
      }
      const decision = x.decision ?? "-";
      const saw = x.stage === "review" && x.agent_saw ? ` (the agent saw the ${x.agent_saw} result)` : "";
      const human = decidedRow(x, v, c);
      if (human) return human;
      return [
        x.stage === "review" ? "governance (review)" : "governance",
        x.step_id ?? "-",
        x.rule ?? "-",
        { text: x.failure ? `${decision} (policy failure)` : decision, style: statusStyle(decision, c) },
        x.enforced === false ? "audit" : x.enforced ? "enforced" : "-",
        oneLine(x.message ?? "") + (x.error?.at ? ` (at ${x.error.at})` : "") + (x.agent_saw === "none" ? "" : saw),
      ];
    }),
    { indent: "  " },
  );
}

/**
 * The row of a governance veto that asked for a human's decision, shown by that decision (`ask: approved`, and who
 * decided and why: what happened to the action); null for any other verdict.
 */
function decidedRow(x: Verdict, v: EpisodeView, c: Output["color"]): Cell[] | null {
  if (x.phase !== "governance" || x.decision !== "veto" || x.enforced === false || x.failure) return null;
  // The decision on the checkpoint this verdict paused at: a step asked again shows each ask with its own decision.
  const human = x.stage === "review" || x.checkpoint_id === null
    ? undefined
    : v.decisions?.find((d) => d.checkpoint_id === x.checkpoint_id);
  if (!human) return null;
  return [
    "governance",
    x.step_id ?? "-",
    x.rule ?? "-",
    { text: `ask: ${human.decision}`, style: statusStyle(human.decision === "approved" ? "ok" : "vetoed", c) },
    "enforced",
    `${oneLine(decisionText(human))} · asked: ${oneLine(x.message ?? "")}`,
  ];
}

/** `Error: kaboom (at boom.ts:3:11)`. */
function failureText(e: { type: string; message: string; at: string | null }): string {
  return `${e.type}${e.message ? `: ${e.message}` : ""}${e.at ? ` (at ${e.at})` : ""}`;
}

function timelineSection(out: Output, v: EpisodeView): void {
  const c = out.color;
  const phases = Object.entries(v.counts.by_phase).map(([p, n]) => `${p} ${n}`).join(", ");
  section(
    out,
    "Timeline",
    `${v.timeline.length < v.counts.events ? `last ${v.timeline.length} of ` : ""}${v.counts.events} events${
      phases ? ` (${phases})` : ""
    }`,
  );
  if (v.timeline.length === 0) {
    out.line("  (no events)");
    return;
  }
  const width = out.stdout.columns;
  for (const t of v.timeline) {
    const dt = t.delta_ms === null ? "?" : `+${formatMs(t.delta_ms)}`;
    const head = `  ${dt.padStart(9)}  ${t.phase.padEnd(16)}  `;
    const summary = width !== undefined ? truncate(t.summary, Math.max(10, width - head.length)) : t.summary;
    out.line(`  ${c.dim(dt.padStart(9))}  ${c.cyan(neutralize(t.phase).padEnd(16))}  ${summary}`.trimEnd());
  }
  if (v.counts.events > TIMELINE_LENGTH) out.line(c.dim(`  (all events: noema events ${v.episode_id})`));
}

function artifactsSection(out: Output, v: EpisodeView): void {
  section(out, "Artifacts", v.episode_dir);
  kv(
    out,
    (Object.entries(v.paths) as [string, string | null][]).map(([k, p]) => [
      k,
      p ?? out.color.dim(k === "summary" || k === "manifest" ? "(not yet: non-terminal run)" : "(missing)"),
    ]),
  );
}

/**
 * Writes the human dashboard of an episode view.
 *
 * @example
 * ```ts
 * // renderView(ctx.out, buildEpisodeView(locateEpisodeRef(id)))
 * ```
 */
export function renderView(out: Output, v: EpisodeView): void {
  header(out, v);
  answerSection(out, v);
  planSection(out, v);
  actionsSection(out, v);
  verificationSection(out, v);
  metricsSection(out, v);
  verdictsSection(out, v);
  timelineSection(out, v);
  artifactsSection(out, v);
}

/** How long a run that is not terminal may show no live writer before `--follow` gives up, in ms. */
const FOLLOW_GRACE_MS = 3000;

/**
 * `view --follow`: on a terminal, clears the screen and redraws whenever the
 * event log grows; stops when the run ends, pauses, or has no live writer
 * for {@link FOLLOW_GRACE_MS} (exit 1). Elsewhere, prints once at the end.
 */
async function followView(ctx: CliContext, loc: EpisodeLocation, json: boolean): Promise<void> {
  const { out } = ctx;
  const live = out.stdout.isTTY && !json;
  const events = episodePaths(loc.dir).events;
  let drawn = "", idleSince: number | null = null;
  while (true) {
    const view = buildEpisodeView(loc);
    // Redraw when the log grows, the state changes, or (running) the elapsed seconds tick.
    const key = `${existsSync(events) ? statSync(events).size : -1}:${view.lifecycle}:${view.run_state}:${
      Math.floor((view.elapsed_ms ?? 0) / 1000)
    }`;
    if (live && key !== drawn) {
      out.stdout.write("\x1b[H\x1b[2J");
      renderView(out, view);
      out.stdout.flush();
      drawn = key;
    }
    const done = view.run_state === "terminal" || view.run_state === "waiting_for_approval" ||
      view.run_state === "paused" || view.run_state === "crashed_while_sealing";
    if (view.run_state === "running" || view.run_state === "idle") idleSince = null;
    else if (!done) idleSince ??= Date.now();
    if (done || (idleSince !== null && Date.now() - idleSince >= FOLLOW_GRACE_MS)) {
      if (!live) json ? out.json(view) : renderView(out, view);
      if (!done) {
        throw new NoemaError(
          "not_running",
          `episode ${loc.id} is not terminal and no live process writes it (crashed)`,
        );
      }
      return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Registers `noema view`. */
export function registerView(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("view")
    .summary("show a dashboard of one episode")
    .description(
      "Show a dashboard of one episode: status, plan, actions, verification, metrics, policy verdicts, " +
        "the last events and the artifact paths. Works for runs that have not finished.",
    )
    .argument("<episode>", "episode id, unique id prefix, 'last', or path to an episode directory")
    .option("-j, --json", "print one JSON object with everything the dashboard shows")
    .option(
      "-f, --follow",
      "follow a live run: redraw on a terminal as events arrive, until it ends or pauses " +
        "(not on a terminal: print the dashboard once it ends or pauses)",
    )
    .addHelpText(
      "after",
      examples(
        ["noema view ep_01K9RBBMXXRSFWR49SXFGF4SPR", "the dashboard"],
        ["noema view last", "the newest episode"],
        ["noema view ep_01K9RB", "a unique id prefix is enough"],
        ["noema view last --follow", "watch a live run"],
        ["noema view ep_01K9… --json | jq .counts", "event counts by phase, actions, verdicts"],
      ) +
        "\n--json prints {episode_id, episode_dir, lifecycle, status, state, summary (null while non-terminal),\n" +
        "plan, counts: {events, by_phase, actions, direction, governance, vetoes, approved, rejected, would_vetoes,\n" +
        "damaged_lines, reviews}, verdicts, decisions ([{step_id, checkpoint_id, decision, by, claimed_by, note, at}]),\n" +
        "failed_actions ([{step_id, error, exit_code, stderr: {lines, total} | null}], the last 5),\n" +
        "timeline, waiting, start, last_event_at, message, answer (an agent's final answer, else null), problems,\n" +
        "tampered ([{file, kind, message}] of files that no longer match manifest.json, null without one), paths}.\n" +
        "A sealed episode whose files no longer match its manifest.json says so in the first line.\n",
    )
    .action(async (episode, opts, cmd) => {
      const loc = locateEpisodeRef(episode, globalOptions(cmd));
      if (opts.follow) {
        await followView(ctx, loc, opts.json === true);
        return;
      }
      const view = buildEpisodeView(loc);
      if (opts.json) ctx.out.json(view);
      else renderView(ctx.out, view);
    });
}
