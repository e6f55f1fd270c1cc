/**
 * `noema plan <episode>`: the plan rebuilt from `events.jsonl`.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { NoemaError } from "../../errors.ts";
import { readPlan } from "../../read/episode.ts";
import type { Plan } from "../../schema/plan.ts";
import { locateEpisodeRef } from "../episode_ref.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { statusStyle, stepMark } from "../format.ts";
import type { Output } from "../output.ts";
import { neutralize, oneLine, truncate } from "../output.ts";

/**
 * Writes a plan's steps, one line each: marker, id, kind, status, description;
 * with `recorded` (step id → status in `state.json`), a differing recorded
 * status is noted after the description.
 *
 * @example
 * ```ts
 * // renderSteps(out, plan, "  ") prints "  ✓ step-1  detect  done     Collect context"
 * ```
 */
export function renderSteps(
  out: Output,
  plan: Plan,
  indent = "",
  recorded?: ReadonlyMap<string, string>,
  decided?: ReadonlyMap<string, string>,
): void {
  const c = out.color;
  const idW = Math.max(2, ...plan.steps.map((s) => s.id.length));
  const kindW = Math.max(4, ...plan.steps.map((s) => String(s.kind).length));
  const width = out.stdout.columns;
  for (const s of plan.steps) {
    const status = neutralize(String(s.status));
    const head = `${indent}${stepMark(status, c)} ${neutralize(s.id).padEnd(idW)}  ${
      neutralize(String(s.kind)).padEnd(kindW)
    }  `;
    const plainHead = indent.length + 2 + idW + 2 + kindW + 2 + 9;
    let desc = oneLine(String(s.description ?? ""));
    if (width !== undefined) desc = truncate(desc, Math.max(10, width - plainHead));
    const other = recorded?.get(s.id);
    const note = other !== undefined && other !== status ? c.dim(` (state.json: ${other})`) : "";
    const decision = decided?.get(s.id);
    const said = decision !== undefined ? ` — ${neutralize(decision)}` : "";
    out.line(`${head}${statusStyle(status, c)(status.padEnd(7))}  ${desc}${note}${said}`.trimEnd());
  }
}

/** Registers `noema plan`. */
export function registerPlan(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("plan")
    .summary("print the plan rebuilt from events")
    .description(
      "Print the plan rebuilt from events.jsonl: the latest plan event, then the step statuses of later act events.",
    )
    .argument("<episode>", "episode id, unique id prefix, 'last', or path to an episode directory")
    .option("-j, --json", "print {steps, source, updated_at} (the shape of state.json plan)")
    .addHelpText(
      "after",
      examples(
        [
          "noema plan ep_01K9RBBMXXRSFWR49SXFGF4SPR",
          "steps with ✓ done, ✗ failed, ⊘ vetoed, ↷ skipped, ▶ running, ○ pending",
        ],
        ["noema plan ep_01K9… --json", "the plan object"],
      ),
    )
    .action((episode, opts, cmd) => {
      const g = globalOptions(cmd);
      const loc = locateEpisodeRef(episode, g);
      const plan = readPlan(loc, g);
      if (plan === null) {
        throw new NoemaError("no_plan", `episode ${loc.id} has no plan event in events.jsonl`);
      }
      const { out } = ctx;
      if (opts.json) {
        out.json(plan);
        return;
      }
      const c = out.color;
      const meta = [plan.source && `source ${plan.source}`, plan.updated_at && `updated ${plan.updated_at}`].filter(
        Boolean,
      );
      out.line(`${c.bold(`Plan of ${loc.id}`)}${meta.length ? c.dim(`  (${meta.join(", ")})`) : ""}`);
      if (plan.rationale) out.line(c.dim(`  ${oneLine(plan.rationale)}`));
      if (plan.steps.length === 0) out.line("  (no steps)");
      renderSteps(out, plan, "  ");
    });
}
