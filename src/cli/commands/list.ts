/**
 * `noema list`: episodes, newest first, as a table, JSON or bare ids.
 *
 * @module
 */
import { readdirSync } from "node:fs";
import { type CommandUnknownOpts, InvalidArgumentError, Option } from "@commander-js/extra-typings";
import { type EpisodeEntry, listEpisodes, statusWord } from "../../read/list.ts";
import { episodesDir, resolveRoot } from "../../store/layout.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { collect, parseTags } from "../args.ts";
import { usageError } from "../errors.ts";
import { statusStyle } from "../format.ts";
import { isDuration, parseSince } from "../time_args.ts";
import { oneLine } from "../output.ts";
import { storeUrlOf, withStore } from "../store_option.ts";
import { emptyStoreNote, listFromStore, storeWords } from "./list_store.ts";

/**
 * Parses a positive integer option value; anything else is a usage error.
 *
 * @example
 * ```ts
 * import { parsePositiveInt } from "./list.ts";
 * parsePositiveInt("5"); // 5
 * ```
 */
export function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) {
    throw new InvalidArgumentError("expected a positive integer.");
  }
  return n;
}

/** The words `--status` accepts; `waiting` stands for `waiting_for_approval`. */
export const LIST_STATUSES: readonly string[] = [
  "ok",
  "error",
  "vetoed",
  "aborted",
  "partial",
  "running",
  "idle",
  "crashed",
  "crashed_while_sealing",
  "waiting",
  "waiting_for_approval",
  "paused",
  "unreadable",
];

/**
 * Parses repeated or comma-separated `--status` values; an unknown one is a
 * usage error listing the known ones.
 *
 * @example
 * ```ts
 * import { parseStatuses } from "./list.ts";
 * parseStatuses(["ok,vetoed", "waiting"]); // ["ok", "vetoed", "waiting_for_approval"]
 * ```
 */
export function parseStatuses(values: readonly string[] | undefined): string[] | undefined {
  if (!values) return undefined;
  const out: string[] = [];
  for (const v of values.flatMap((x) => x.split(",")).map((x) => x.trim().toLowerCase()).filter(Boolean)) {
    if (!LIST_STATUSES.includes(v)) {
      throw usageError(`--status: unknown status ${JSON.stringify(v)} (known: ${LIST_STATUSES.join(", ")})`);
    }
    out.push(v === "waiting" ? "waiting_for_approval" : v);
  }
  return out;
}

/** Registers `noema list`. */
export function registerList(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("list")
    .alias("ls")
    .summary("list episodes, newest first")
    .description("List episodes, newest first: a table, a JSON array (--json) or bare ids (--quiet).")
    .addOption(new Option("-n, --limit <n>", "most episodes to show").argParser(parsePositiveInt).default(20))
    .option(
      "-s, --status <status>",
      "only this status: ok, error, vetoed, aborted, partial, running, idle, crashed, crashed_while_sealing, waiting, " +
        "paused, " +
        "unreadable; " +
        "repeatable or comma-separated",
      collect,
    )
    .option(
      "--since <date>",
      "only episodes started since a date (2025-11-01) or a duration ago (2h, 7d); with a store, stored since",
    )
    .option("-t, --tag <key=value>", "only episodes with this tag; repeatable (all must match)", collect)
    .option("--task <text>", "only episodes whose task contains this text (case-insensitive)")
    .option("--host <name>", "only runs published from this host (with a shared store)")
    .option("--adapter <label>", "only runs of this adapter (with a shared store)")
    .option("--policy <id>", "only runs that consulted this policy, e.g. NoPush@1.0 (with a shared store)")
    .option("-j, --json", "print a JSON array of entries")
    .option("-q, --quiet", "print only episode ids, one per line")
    .addHelpText(
      "after",
      examples(
        ["noema list", "the 20 newest episodes"],
        ["noema list --limit 5 --json", "entries as JSON"],
        ["noema list --status vetoed --since 7d", "vetoed runs of the last week"],
        ["noema list --tag team=infra --task deploy -n 5", "filters combine, then --limit applies"],
        ["noema list -q | xargs -n1 noema validate", "validate every listed episode"],
        ["noema --root ../other/.noema list", "episodes under another root"],
      ) +
        "\nColumns: STARTED_AT, EPISODE_ID, STATUS, OUTCOME (verification outcome of a finished run), TASK.\n" +
        "STATUS is how a finished run ended (ok, error, vetoed, aborted, partial), or where an unfinished one is:\n" +
        "'running 12s' (its process holds the lock), 'idle' (an agent session between two hook calls, its agent\n" +
        "alive: its next call continues it), 'waiting for approval', 'paused' (a checkpoint to resume),\n" +
        "'crashed' (no live process, no checkpoint, no live agent session: noema resume recovers it).\n" +
        "With a shared store: a HOST column; STARTED_AT is by that host's clock, and the runs are ordered and\n" +
        "--since filters by when the store first stored each one (its clock: hosts' clocks disagree).\n",
    )
    .action(async (opts, cmd) => {
      const g = globalOptions(cmd);
      const filters = {
        limit: opts.limit,
        status: parseStatuses(opts.status),
        since: opts.since === undefined ? undefined : parseSince(opts.since, "--since"),
        tags: parseTags(opts.tag),
        task: opts.task,
      };
      const fleet = { host: opts.host, adapter: opts.adapter, policy: opts.policy };
      const store = storeUrlOf(cmd);
      if (store === null && Object.values(fleet).some((v) => v !== undefined)) {
        throw usageError("--host, --adapter and --policy filter a shared store's catalog: give --store or NOEMA_STORE");
      }
      let where = ""; // the store listed, for what an empty answer says
      const entries = store === null ? listEpisodes({ ...g, ...filters }) : await withStore(cmd, (s) => {
        where = storeWords(s);
        return listFromStore(s, {
          ...filters,
          // A duration ago is counted on the store's clock; a date is a date.
          ...(filters.since === undefined
            ? { since: undefined }
            : isDuration(opts.since!)
            ? { since: undefined, within_ms: Date.now() - filters.since }
            : { since: new Date(filters.since).toISOString() }),
          ...fleet,
        }, g);
      }, { scoped: true });
      const { out } = ctx;
      // Whatever the format, an empty answer says why on stderr (JSON stays an empty list).
      if (entries.length === 0) {
        const words = filterWords(opts);
        out.note(
          `noema: ${store === null ? emptyListNote(episodesDir(resolveRoot(g)), words) : emptyStoreNote(where, words)}`,
        );
      }
      if (opts.json) out.json(entries);
      else if (opts.quiet) { for (const e of entries) out.line(e.episode_id); }
      else if (entries.length > 0) printTable(ctx, entries, store !== null);
    });
}

/** The filters given, as typed: `--status vetoed`, `--tag team=infra`, … */
function filterWords(
  opts: { status?: string[]; since?: string; tag?: string[]; task?: string },
): string[] {
  return [
    ...(opts.status ?? []).map((s) => `--status ${s}`),
    ...(opts.since === undefined ? [] : [`--since ${opts.since}`]),
    ...(opts.tag ?? []).map((t) => `--tag ${t}`),
    ...(opts.task === undefined ? [] : [`--task ${JSON.stringify(opts.task)}`]),
  ];
}

/**
 * What an empty `list` says: there are no episodes at all, or (with filters) how many there are and
 * that none matches the filters, named.
 *
 * @example
 * ```ts
 * import { emptyListNote } from "./list.ts";
 * emptyListNote(".noema/episodes", ["--status vetoed"]);
 * // "none of the 3 episodes in .noema/episodes match the filters: --status vetoed" (when 3 exist)
 * ```
 */
export function emptyListNote(dir: string, filters: readonly string[]): string {
  let total = 0;
  try {
    total = readdirSync(dir).filter((n) => n.startsWith("ep_")).length;
  } catch {
    // No episodes folder: no episodes.
  }
  if (total === 0 || filters.length === 0) return `no episodes in ${dir}`;
  const n = total === 1 ? "the 1 episode" : `the ${total} episodes`;
  return `none of ${n} in ${dir} ${total === 1 ? "matches" : "match"} the filters: ${filters.join(" ")}`;
}

/** The entries as a table: started at, id, status (or where an unfinished run is), outcome, task. */
function printTable(ctx: CliContext, entries: (EpisodeEntry & { host?: string })[], fleet: boolean): void {
  const { out } = ctx;
  const c = out.color;
  out.table(
    [
      // From a store, each run's start is by its own host's clock (the rows are ordered by the store's).
      { header: fleet ? "STARTED_AT (HOST CLOCK)" : "STARTED_AT" },
      { header: "EPISODE_ID" },
      ...(fleet ? [{ header: "HOST" }] : []),
      { header: "STATUS" },
      { header: "OUTCOME" },
      { header: "TASK", flex: true },
    ],
    entries.map((e) => [
      e.started_at ?? "-",
      { text: e.episode_id, style: c.cyan },
      ...(fleet ? [e.host ?? "-"] : []),
      {
        text: statusWord(e),
        style: statusStyle(e.run_state === "terminal" ? e.status : e.run_state, c),
      },
      { text: e.outcome ?? "-", style: e.outcome ? statusStyle(e.outcome, c) : c.dim },
      (e.task !== null ? oneLine(e.task) : e.error ? `(${oneLine(e.error)})` : "-") +
      (e.pending ? `  [${e.pending.step_id}: ${oneLine(e.pending.reason)}]` : ""),
    ]),
  );
}
