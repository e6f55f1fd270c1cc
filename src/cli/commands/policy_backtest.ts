/**
 * `noema policy backtest [EPISODE…] [--policy FILE…] [--rules FILE…]
 * [--without ID…] [--since 30d] [--status S] [--tag K=V] [--task TEXT]
 * [--limit N] [--json]`: what a policy or rules change would have decided
 * about every action recorded under the root, compared with what was
 * decided. Exit 0 when no verdict flips, 3 when one does. Nothing is written.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { Option } from "@commander-js/extra-typings";
import { EXIT } from "../../errors.ts";
import { backtest, type BacktestRow, type BacktestTotals } from "../../backtest/backtest.ts";
import type { ActionBacktest } from "../../backtest/episode.ts";
import { FLIP_KINDS } from "../../backtest/verdict.ts";
import { collect, parseTags } from "../args.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import type { Output } from "../output.ts";
import { oneLine } from "../output.ts";
import { isDuration, parseSince } from "../time_args.ts";
import { storeUrlOf, withStore } from "../store_option.ts";
import { usageError } from "../errors.ts";
import type { CatalogFilter } from "../../shared_store/shared_store.ts";
import { parsePositiveInt, parseStatuses } from "./list.ts";

const ARROW = (kind: string) => kind.replace("_to_", "→");

function reason(d: { policy_id: string | null; message: string; errors?: ActionBacktest["candidate"]["errors"] }) {
  return oneLine(d.policy_id ? `${d.policy_id}: ${d.message}` : d.message);
}

/** One row as text (a flip: the action, then the recorded and candidate verdicts with their reasons). */
function textRow(out: Output, row: BacktestRow): void {
  if (row.type === "skipped") return out.note(`noema: ${row.episode_id}: left out: ${row.reason}`);
  if (row.type === "not_reached") {
    return out.line(`not reached  ${row.episode_id}  (its run stopped at a block now let through)`);
  }
  const head = row.type === "flip" ? ARROW(row.flip) : "policy error";
  out.line(`${head}  ${row.episode_id}  ${row.step_id}  ${row.tool}  ${oneLine(row.input_excerpt)}`);
  out.line(`  recorded:  ${row.recorded.verdict.padEnd(5)}  ${reason(row.recorded)}`);
  out.line(`  candidate: ${row.candidate.verdict.padEnd(5)}  ${reason(row.candidate)}`);
  for (const e of row.candidate.errors) {
    out.line(`  policy ${e.policy_id} failed: ${e.type}: ${oneLine(e.message)}${e.at ? ` (at ${e.at})` : ""}`);
  }
}

/** The totals as text. */
function textTotals(out: Output, t: BacktestTotals): void {
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const kinds = FLIP_KINDS.filter((k) => t.flips[k] > 0).map((k) => `${ARROW(k)} ${t.flips[k]}`);
  out.line(
    `backtest: ${plural(t.episodes, "episode")}, ${plural(t.actions, "action")}: ${t.unchanged} unchanged, ` +
      `${t.flipped} flipped${kinds.length > 0 ? ` (${kinds.join(", ")})` : ""}`,
  );
  if (t.policy_errors > 0) out.line(`  policy errors: ${plural(t.policy_errors, "action")}`);
  if (t.not_reached > 0) {
    out.line(
      `  not reached: ${plural(t.not_reached, "episode")} (stopped at a block the candidate set lets through: ` +
        "what came after was never proposed)",
    );
  }
  if (t.skipped > 0) out.line(`  left out: ${plural(t.skipped, "episode")} (see above)`);
  if (t.changed_policies.length > 0) {
    out.line(`  changed since recorded (ran as they are now): ${t.changed_policies.join(", ")}`);
  }
}

/** The catalog filter of the store's episodes, as `noema list --store` reads `--since` (a duration on its clock). */
function storeFilter(
  f: { status?: string[]; since?: number; tags?: Record<string, string>; task?: string },
  since: string | undefined,
): CatalogFilter {
  return {
    status: f.status,
    tags: f.tags,
    task: f.task,
    ...(f.since === undefined || since === undefined
      ? {}
      : isDuration(since)
      ? { within_ms: Date.now() - f.since }
      : { since: new Date(f.since).toISOString() }),
  };
}

/**
 * Registers `noema policy backtest` under `noema policy`.
 *
 * @example
 * ```ts
 * import { registerPolicyBacktest } from "./policy_backtest.ts";
 * // registerPolicyBacktest(program.command("policy"), ctx);
 * ```
 */
export function registerPolicyBacktest(policy: CommandUnknownOpts, ctx: CliContext): void {
  policy
    .command("backtest")
    .summary("what a policy or rules change would have decided about recorded actions")
    .description(
      "Replay every proposed action recorded under the root (or the episodes named; with a shared store in force,\n" +
        "--store or NOEMA_STORE, the fleet's episodes, read one at a time from the store) through a\n" +
        "candidate policy set: each episode's recorded policies, with --policy files added (or replacing the recorded policy of the same\n" +
        "id), --without ids left out and --rules files changing the rule sets of Rules@1.0. The snapshot each policy\n" +
        "sees is rebuilt from the events before the action, as resume rebuilds it; policies run in their workers with\n" +
        "the recorded timeout. Prints each action whose verdict (allow, ask, deny) flips, then the totals. Nothing\n" +
        "runs and nothing is written: no workspace, root or store is touched.",
    )
    .argument("[episodes...]", "episode ids or directories (default: every episode that passes the filters)")
    .option("-p, --policy <file>", "a candidate policy file: added, or replacing the recorded one of its id", collect)
    .option("-r, --rules <file>", "a rules file: replaces the recorded rule set read from it, else is added", collect)
    .option("-w, --without <id>", "leave this recorded policy out (Rules@1.0: the recorded rule sets)", collect)
    .option("--since <date>", "only episodes started since a date (2025-11-01) or a duration ago (30d)")
    .option("-s, --status <status>", "only episodes of this status (as noema list); repeatable", collect)
    .option("-t, --tag <key=value>", "only episodes with this tag; repeatable (all must match)", collect)
    .option("--task <text>", "only episodes whose task contains this text (case-insensitive)")
    .addOption(new Option("-n, --limit <n>", "at most the newest N episodes").argParser(parsePositiveInt))
    .option("-j, --json", "NDJSON: one row per flip, policy error, left-out or not-reached episode, then totals")
    .addHelpText(
      "after",
      examples(
        ["noema policy backtest --rules team-rules.jsonc --since 30d", "an edited rules file over the last 30 days"],
        ["noema policy backtest --policy no-rm.ts", "a new (or changed) policy over every recorded episode"],
        ["noema policy backtest --without NoPush@1.0 --json", "what dropping a policy would let through, NDJSON"],
        ["noema policy backtest ep_01M8… --policy p.ts", "only the episodes named"],
        ["noema policy backtest --store postgres://db/noema --rules r.jsonc", "the fleet's runs, read from the store"],
      ) +
        "\nVerdicts: allow (the action runs), ask (blocked until approved), deny (blocked). A flip is a recorded\n" +
        "verdict that the candidate set changes (allow→deny, deny→allow, allow→ask, ask→allow, ask→deny, deny→ask).\n" +
        "An episode that stopped at a block the candidate set lets through is 'not reached': its later actions were\n" +
        "never proposed. A candidate policy that throws or times out is reported on each action it failed on.\n" +
        'JSON rows: {"type": "flip", "flip", "episode_id", "step_id", "action_candidate_id", "tool",\n' +
        '"input_excerpt", "recorded": {verdict, decision, rule, policy_id, message}, "candidate": {… errors}},\n' +
        '{"type": "policy_error", …}, {"type": "skipped", "episode_id", "reason"}, {"type": "not_reached",\n' +
        '"episode_id"}, last {"type": "totals", "episodes", "actions", "unchanged", "flipped", "flips": {kind: n},\n' +
        '"policy_errors", "not_reached", "skipped", "changed_policies"}.\n' +
        "Exit codes: 0 no verdict flips, 3 one or more flip, 2 usage (a bad flag, a policy or rules file that\n" +
        "cannot load).\n",
    )
    .action(async (episodes, opts, cmd) => {
      const g = globalOptions(cmd);
      const filters = {
        status: parseStatuses(opts.status),
        since: opts.since === undefined ? undefined : parseSince(opts.since, "--since"),
        tags: parseTags(opts.tag),
        task: opts.task,
      };
      const onRow = (row: BacktestRow) => opts.json ? ctx.out.ndjson(row) : textRow(ctx.out, row);
      const options = {
        root: g.root,
        episodes,
        filters,
        limit: opts.limit,
        policies: opts.policy,
        rules: opts.rules,
        without: opts.without,
      };
      const pick = storeUrlOf(cmd);
      if (pick !== null && episodes.length > 0) {
        throw usageError("episode arguments read the local root: leave out the store");
      }
      const totals = pick === null ? await backtest(options, onRow) : await withStore(
        cmd,
        (store) => backtest({ ...options, store: { store, filter: storeFilter(filters, opts.since) } }, onRow),
        { scoped: true },
      );
      if (opts.json) ctx.out.ndjson(totals);
      else textTotals(ctx.out, totals);
      ctx.exitCode = totals.flipped > 0 ? EXIT.VETOED : EXIT.OK;
    });
}
