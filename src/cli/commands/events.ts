/**
 * `noema events <episode>`: the event timeline, one line per event, or
 * NDJSON exactly as stored. Streams: memory does not grow with the log.
 * With `--follow`, keeps printing events as they are written until the run
 * ends or pauses.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { existsSync } from "node:fs";
import process from "node:process";
import { EXIT, NoemaError } from "../../errors.ts";
import { episodePaths } from "../../read/episode.ts";
import { readJsonl } from "../../store/jsonl.ts";
import { collect } from "../args.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { locateEpisodeRef } from "../episode_ref.ts";
import { usageError } from "../errors.ts";
import { followEvents } from "../follow.ts";
import { followFromStore, hasLocalEpisode } from "../follow_store.ts";
import { storeUrlOf, withStore } from "../store_option.ts";
import { eventSummary } from "../format.ts";
import { neutralize, type Output } from "../output.ts";
import { KNOWN_PHASES } from "../../schema/event.ts";

/** Width the phase column is padded to (the longest common phase, `action_candidate`). */
export const PHASE_WIDTH = 16;

/**
 * Parses repeated or comma-separated `--phase` values; an unknown phase is a
 * usage error (exit 2) listing the known ones.
 *
 * @example
 * ```ts
 * import { parsePhases } from "./events.ts";
 * parsePhases(["act", "direction,governance"]); // Set { "act", "direction", "governance" }
 * ```
 */
export function parsePhases(values: readonly string[] | undefined): Set<string> | null {
  if (!values || values.length === 0) return null;
  const out = new Set<string>();
  for (const p of values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter(Boolean)) {
    if (!KNOWN_PHASES.includes(p)) {
      throw usageError(`--phase: unknown phase ${JSON.stringify(p)} (known: ${KNOWN_PHASES.join(", ")})`);
    }
    out.add(p);
  }
  return out;
}

function printEvent(out: Output, e: Record<string, unknown>, raw: string, json: boolean | undefined): void {
  if (json) {
    out.ndjson(e, raw);
    return;
  }
  const c = out.color;
  const ts = typeof e.timestamp === "string" ? neutralize(e.timestamp) : "?";
  const phase = typeof e.phase === "string" ? neutralize(e.phase) : "?";
  out.line(`${c.dim(`[${ts}]`)} ${c.cyan(phase.padEnd(PHASE_WIDTH))} ${eventSummary(e)}`.trimEnd());
}

async function follow(ctx: CliContext, dir: string, phases: Set<string> | null, json: boolean | undefined) {
  const { out } = ctx;
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  try {
    const it = followEvents(dir, { signal: controller.signal });
    let r = await it.next();
    for (; !r.done; r = await it.next()) {
      const { value, text, line } = r.value;
      if (value === null) {
        throw new NoemaError("jsonl_json", "not a JSON object", { file: episodePaths(dir).events, line });
      }
      if (phases === null || phases.has(String(value.phase))) printEvent(out, value, text, json);
      out.stdout.flush();
    }
    if (r.value === "aborted") ctx.exitCode = EXIT.INTERRUPTED;
    else if (r.value === "not_running") {
      throw new NoemaError(
        "not_running",
        "the run is not terminal and no live process writes it (crashed? see noema list; noema resume recovers it)",
      );
    } else if (r.value === "paused") out.note("noema: the run is paused, waiting for approval");
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
}

/** Registers `noema events`. */
export function registerEvents(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("events")
    .summary("print the event timeline")
    .description("Print an episode's events: '[timestamp] phase summary' lines, or NDJSON exactly as stored (--json).")
    .argument("<episode>", "episode id, unique id prefix, 'last', or path to an episode directory")
    .option(
      "-p, --phase <phase>",
      `only events of this phase; repeatable or comma-separated (${KNOWN_PHASES.join(", ")})`,
      collect,
    )
    .option("-j, --json", "print the events as NDJSON, one per line, exactly as stored")
    .option("-f, --follow", "keep printing events as they are written; exit 0 when the run ends or pauses")
    .addHelpText(
      "after",
      examples(
        ["noema events ep_01K9RBBMXXRSFWR49SXFGF4SPR", "the whole timeline"],
        ["noema events last --phase act", "only act events of the newest episode"],
        ["noema events ep_01K9 -p direction -p governance", "policy verdicts and decisions (an id prefix works)"],
        ["noema events last --follow --json", "NDJSON as a live run writes it"],
        ["noema events ep_01K9… --follow --store postgres://…", "follow a run of another machine"],
        ["noema events ep_01K9… --json | jq -c .payload", "payloads, with jq"],
      ) +
        "\nA damaged line stops the listing: the events before it are printed, then an error naming\n" +
        "file:line (exit 1). 'noema validate' lists every problem instead.\n" +
        "--follow exits 0 when the run ends (summary.json written) or pauses for approval, 1 when no live\n" +
        "process writes a run that has not ended (crashed), 130 on Ctrl-C. With a shared store (--store,\n" +
        "NOEMA_STORE), an episode not held here is followed from the store, woken by its notifications;\n" +
        "one the store does not hold yet (a run just started elsewhere) is waited for, up to 10 s.\n",
    )
    .action(async (episode, opts, cmd) => {
      const phases = parsePhases(opts.phase);
      const store = opts.follow ? storeUrlOf(cmd) : null;
      if (store !== null && !hasLocalEpisode(episode, globalOptions(cmd))) {
        await withStore(cmd, (s) =>
          followFromStore(ctx, s, episode, (e, raw) => {
            if (phases === null || phases.has(String(e.phase))) printEvent(ctx.out, e, raw, opts.json);
          }), { scoped: true });
        return;
      }
      const loc = locateEpisodeRef(episode, globalOptions(cmd));
      if (opts.follow) {
        await follow(ctx, loc.dir, phases, opts.json);
        return;
      }
      const path = episodePaths(loc.dir).events;
      if (!existsSync(path)) throw new NoemaError("not_found", `episode ${loc.id} has no events.jsonl`, { file: path });
      for (const entry of readJsonl(path, { noFollow: true })) {
        if (entry.problem) {
          throw new NoemaError(`jsonl_${entry.problem}`, entry.message, { file: path, line: entry.line });
        }
        if (phases === null || phases.has(String(entry.value.phase))) {
          printEvent(ctx.out, entry.value, entry.text, opts.json);
        }
      }
    });
}
