/**
 * `noema store init|status|migrate`, `noema sync` and `noema pull ID`: the
 * shared store's schema, publishing a root's episodes to it, and
 * materialising an episode from it.
 *
 * @module
 */
import { type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { EXIT, NoemaError } from "../../errors.ts";
import { pullEpisode } from "../../shared_store/pull.ts";
import { type CatalogRow, deciderText, isUnreadable } from "../../shared_store/shared_store.ts";
import { clearPending, pendingIds } from "../../shared_store/pending.ts";
import { type HandoffEntry, lastHandoff } from "../../shared_store/handoff_log.ts";
import { storedPendingCall } from "../../shared_store/pending_call.ts";
import { type SyncOptions, syncRoot } from "../../shared_store/sync.ts";
import { locateEpisode, resolveRoot } from "../../store/layout.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { oneLine } from "../output.ts";
import { withStore } from "../store_option.ts";
import { registerStorePrune } from "./store_prune.ts";
import { registerStoreProjects } from "./store_projects.ts";

const STORE_HELP = "\nThe store is --store URL (before or after the command), else $NOEMA_STORE. See docs/store.md.\n";

/** Registers `noema store` with its subcommands init, status and migrate. */
export function registerStore(program: CommandUnknownOpts, ctx: CliContext): void {
  const store = program
    .command("store")
    .summary("create, migrate and inspect the shared store (PostgreSQL or a shared directory)")
    .description("Manage the shared store that a team's noema processes publish their episodes to.")
    .addHelpText(
      "after",
      examples(
        ["noema store init --store postgres://noema@db/noema", "create the schema (idempotent)"],
        ["NOEMA_STORE=postgres://noema@db/noema noema store status --json", "schema version and episode count"],
        ["noema store init --store file:///mnt/team/noema", "a store in a directory on a shared file system"],
        [
          "noema store init --roles --store postgres://owner@db/noema",
          "also the runner, approver, reader and serve roles",
        ],
        ["noema store audit --json", "check the hash-chained decision log; prints the head hash to record elsewhere"],
      ) + STORE_HELP,
    );
  const migrate = (label: string) => migrateAction(label, ctx);
  store.command("init").description("create the schema (a no-op when it exists)")
    .option("-j, --json", 'print {"location","from","to"} (and "roles")')
    .option(
      "--roles",
      "also create or update the roles the database enforces: noema_runner, noema_approver, noema_reader, " +
        "noema_server " +
        "(PostgreSQL; as the owner, with CREATEROLE)",
    )
    .action(migrate("init"));
  store.command("migrate").description("bring the schema to this noema's version (under an advisory lock)")
    .option("-j, --json", 'print {"location","from","to"}')
    .action(migrate("migrate"));
  registerAudit(store, ctx);
  registerStatus(store, ctx);
  registerStorePrune(store, ctx);
  registerStoreProjects(store, ctx);
}

/** The action of `store init` and `store migrate` (`label`): migrate, and with `--roles` make the roles. */
function migrateAction(label: string, ctx: CliContext) {
  return async (opts: { json?: boolean; roles?: boolean }, cmd: CommandUnknownOpts): Promise<void> => {
    await withStore(cmd, async (s) => {
      if (opts.roles && !s.createRoles) {
        throw new NoemaError("usage", `--roles: ${s.location} is a files store; roles are PostgreSQL's`, {
          exitCode: EXIT.USAGE,
        });
      }
      const r = await s.migrate();
      if (opts.roles) await s.createRoles!();
      const roles = opts.roles ? ["noema_runner", "noema_approver", "noema_reader", "noema_server"] : undefined;
      if (opts.json) ctx.out.json({ location: s.location, ...r, ...(roles ? { roles } : {}) });
      else {
        ctx.out.line(
          r.from === r.to
            ? `${label}: ${s.location} is at schema version ${r.to}; nothing to do`
            : `${label}: ${s.location} schema version ${r.from} → ${r.to}`,
        );
        if (roles) {
          ctx.out.line(
            `roles: ${roles.join(", ")} (NOLOGIN groups); add a login role with: CREATE ROLE ana LOGIN IN ROLE ` +
              `noema_approver`,
          );
        }
      }
    });
  };
}

/** Registers `noema store status`. */
function registerStatus(store: CommandUnknownOpts, ctx: CliContext): void {
  store.command("status").description(
    "the schema version, this noema's version, the episode count, the TLS in use, and the connected role's powers",
  )
    .option(
      "-j, --json",
      'print {"kind","location","schema_version","latest_version","episodes","local"} (and "tls", and "role": ' +
        '{"name","powers": {"publish","decide","serve","read","own"}}); "local": {"root","pending","last_handoff"}',
    )
    .action(async (opts, cmd) => {
      await withStore(cmd, async (s) => {
        const st = await s.status();
        const local = localPublishing(resolveRoot(globalOptions(cmd)));
        if (opts.json) ctx.out.json({ ...st, local });
        else {
          ctx.out.line(`store     ${st.location} (${st.kind})`);
          ctx.out.line(`schema    ${st.schema_version} (this noema: ${st.latest_version})`);
          ctx.out.line(`episodes  ${st.episodes ?? "- (run noema store init)"}`);
          if (st.tls !== undefined) ctx.out.line(`tls       ${st.tls ?? "none: the connection is not encrypted"}`);
          if (st.role) {
            const may = Object.entries(st.role.powers).filter(([, v]) => v).map(([k]) => k);
            ctx.out.line(`role      ${st.role.name}: ${may.length ? may.join(", ") : "nothing"}`);
          }
          for (const line of localLines(local)) ctx.out.line(line);
        }
        if (st.schema_version < st.latest_version) ctx.exitCode = EXIT.ERROR;
      });
    });
}

/** What this root has still to publish, and what its last hand-over sync said. */
interface LocalPublishing {
  root: string;
  /** Episodes marked pending under the root (published by the next `noema sync`). */
  pending: string[];
  last_handoff: HandoffEntry | null;
}

function localPublishing(root: string): LocalPublishing {
  return { root, pending: pendingIds(root), last_handoff: lastHandoff(root) };
}

/** `store status`'s lines about this root: its pending episodes and its last hand-over sync. */
function localLines(l: LocalPublishing): string[] {
  const ids = l.pending.length > 3 ? `${l.pending.slice(0, 3).join(", ")}, …` : l.pending.join(", ");
  const out = [
    l.pending.length === 0
      ? `pending   none under ${l.root}`
      : `pending   ${l.pending.length} episode${l.pending.length === 1 ? "" : "s"} under ${l.root} not yet ` +
        `published: ${ids} (noema sync publishes them, as does the next command with a store)`,
  ];
  const h = l.last_handoff;
  if (h) out.push(`handoff   ${oneLine(`${h.at} ${h.episodes.join(" ")}: ${h.said ?? "(nothing said yet)"}`)}`);
  return out;
}

/** `--head 1234:<64 hex>`, or a usage error naming the option. */
function pinnedHead(text: string): { chain_seq: number; row_hash: string } {
  const m = /^(\d{1,15}):([0-9a-f]{64})$/.exec(text.trim());
  if (!m || Number(m[1]) < 1) {
    throw new NoemaError("usage", `--head ${JSON.stringify(text)}: give chain_seq:row_hash (1234:<64 hex digits>)`, {
      exitCode: EXIT.USAGE,
    });
  }
  return { chain_seq: Number(m[1]), row_hash: m[2] };
}

/** Registers `noema store audit`. */
function registerAudit(store: CommandUnknownOpts, ctx: CliContext): void {
  store.command("audit")
    .summary("check the hash-chained decision log (PostgreSQL): name the first row changed, deleted or inserted")
    .description(
      "walk the hash-chained decision log (PostgreSQL) and name the first row that breaks it: changed, deleted or\n" +
        "inserted out of band (exit 1); exit 0 with the counts and the head hash (record it elsewhere: the owner can\n" +
        "rewrite the whole chain consistently)",
    )
    .option("-j, --json", 'print {"ok","rows","tombstones","head":{"chain_seq","row_hash"},"broken"}')
    .option(
      "--head <seq:hash>",
      "a head recorded earlier (chain_seq:row_hash): that row must still have that hash (a chain rewritten or cut " +
        "short by the owner is caught)",
    )
    .action(async (opts, cmd) => {
      const pinned = opts.head === undefined ? undefined : pinnedHead(opts.head);
      await withStore(cmd, async (s) => {
        if (!s.audit) {
          throw new NoemaError(
            "usage",
            `store audit: ${s.location} is a files store; the hash-chained decision log is PostgreSQL-only`,
            { exitCode: EXIT.USAGE },
          );
        }
        const r = await s.audit(pinned);
        if (opts.json) ctx.out.json({ location: s.location, ...r });
        else if (r.ok) {
          const head = r.head ? `head ${r.head.chain_seq} ${r.head.row_hash}` : "empty";
          ctx.out.line(
            `audit: ${s.location}: ${r.rows} decisions chained (${r.tombstones} tombstones), ok; ${head}; ` +
              `${r.records} published decision records checked`,
          );
        }
        if (!r.ok && r.broken?.file !== undefined) {
          const b = r.broken;
          ctx.out.note(
            `noema: a decision record ${s.location} holds is not the store's decision (${b.episode_id} ` +
              `${b.file}): ${b.problem}; the decision log itself holds (${r.rows} rows)`,
          );
          ctx.exitCode = EXIT.ERROR;
        } else if (!r.ok) {
          const b = r.broken!;
          const which = b.chain_seq === null ? "a row" : `row ${b.chain_seq}`;
          ctx.out.note(
            `noema: the decision log of ${s.location} is broken at ${which} (${b.episode_id ?? "?"} ` +
              `${b.checkpoint_id ?? "?"}): ${b.problem}; ${r.rows} rows before it hold`,
          );
          ctx.exitCode = EXIT.ERROR;
        }
      });
    });
}

/** Registers `noema sync`. */
export function registerSync(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("sync")
    .summary("publish this root's episodes to the shared store")
    .description(
      "Publish every episode under the root that the shared store lacks or has only in part: each stream line\n" +
        "once, with its exact bytes; changed files; the catalog row. A line that differs from the one stored is a\n" +
        "conflict: reported, never overwritten (exit 1). A copy this root has that the store holds more lines of (the\n" +
        "store's is another run under the same id) is a conflict too. Whatever it sends of a sealed episode is then\n" +
        "checked against the episode's manifest (the store's lines hashed as the file they make): a shared copy that\n" +
        "differs is an error naming the file (exit 1), and its catalog row is not marked ended. --verify checks every\n" +
        "sealed episode so, sent or not. Copies pulled from the store are skipped: the root that ran them publishes them.",
    )
    .argument("[episodes...]", "only these episode ids (default: every episode of the root)")
    .option("-j, --json", "print one JSON row per episode (NDJSON)")
    .option("--verify", "check every sealed episode's shared copy against its manifest, even when nothing is sent")
    .addOption(new Option("--handoff", "internal: a run's last publish, handed over (waits for its lease)").hideHelp())
    .addHelpText(
      "after",
      examples(["noema sync --store postgres://noema@db/noema", "publish what is missing"]) + STORE_HELP,
    )
    .action(async (ids, opts, cmd) => {
      const root = resolveRoot(globalOptions(cmd));
      // An id the root does not hold is an error, not "synced 0 episodes" (a hand-over names what its run wrote).
      if (!opts.handoff) { for (const id of ids) locateEpisode(id, { root }); }
      const options = {
        only: ids.length ? ids : undefined,
        heldRetryMs: opts.handoff ? HANDOFF_WINDOW_MS : 0,
        verify: opts.verify === true,
      };
      // A hand-over sync (detached, its output in the hand-over log) tries again while the store is unreachable or
      // slow to answer, within its window: the episode stays marked pending until it is published.
      const until = Date.now() + HANDOFF_WINDOW_MS;
      for (;;) {
        try {
          return await syncOnce(cmd, ctx, root, options, opts.json === true);
        } catch (e) {
          const transient = e instanceof NoemaError && ["store_unreachable", "store_timeout"].includes(e.code);
          if (!opts.handoff || !transient || Date.now() + HANDOFF_RETRY_MS >= until) throw e;
          ctx.out.note(`noema: ${(e as Error).message}; trying again in ${HANDOFF_RETRY_MS / 1000} s`);
          await new Promise((r) => setTimeout(r, HANDOFF_RETRY_MS));
        }
      }
    });
}

/** How long a hand-over sync (`--handoff`) keeps at it: waiting for the run's lock and lease, retrying the store. */
const HANDOFF_WINDOW_MS = 120_000;
/** A hand-over sync's pause before it tries an unreachable or timed-out store again. */
const HANDOFF_RETRY_MS = 2_000;

/** One `noema sync` pass: publishes, prints its rows or its line, and sets the exit code when one failed. */
async function syncOnce(
  cmd: CommandUnknownOpts,
  ctx: CliContext,
  root: string,
  options: SyncOptions,
  json: boolean,
): Promise<void> {
  await withStore(cmd, async (s) => {
    const rows = await syncRoot(s, root, (row, done, total) => {
      if (json) ctx.out.ndjson(row);
      else if (row.error) ctx.out.note(`noema: ${row.episode_id}: ${row.error}`);
      else if (row.skipped && options.heldRetryMs) ctx.out.note(`noema: ${row.episode_id}: left alone: ${row.skipped}`);
      else if (ctx.out.stderr.isTTY) ctx.out.stderr.write(`\rsync ${done}/${total}${done === total ? "\n" : ""}`);
    }, options);
    const failed = rows.filter((r) => r.error).length;
    for (const r of rows) if (!r.error && !r.skipped) clearPending(root, r.episode_id);
    if (!json) {
      const lines = rows.reduce((a, r) => a + r.lines, 0), files = rows.reduce((a, r) => a + r.files, 0);
      ctx.out.line(
        `synced ${count(rows.length, "episode")} to ${s.location}: ${count(lines, "new line")}, ${
          count(files, "file")
        }` +
          (failed ? `; ${failed} failed` : ""),
      );
    }
    if (failed) ctx.exitCode = EXIT.ERROR;
  });
}

/** `1 episode`, `2 episodes`. */
const count = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

/** Registers `noema pull`. */
export function registerPull(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("pull")
    .summary("materialise an episode from the shared store")
    .description(
      "Write <root>/episodes/<id>/ from the shared store, byte-identical to the published directory (its manifest\n" +
        "digests and signature verify). Refused when the directory exists, unless it is a copy pulled while its run\n" +
        "was still going: that one is pulled again when the store has more of it.",
    )
    .argument("<episode>", "the episode id")
    .option(
      "-j, --json",
      'print {"episode_dir","files","lines"} (and "refreshed" or "unchanged": true for a pulled copy)',
    )
    .addHelpText(
      "after",
      examples(["noema pull ep_01K9… --store postgres://noema@db/noema", "copy one run here"]) + STORE_HELP,
    )
    .action(async (id, opts, cmd) => {
      const root = resolveRoot(globalOptions(cmd));
      await withStore(cmd, async (s) => {
        const r = await pullEpisode(s, id, root, { refresh: true });
        if (opts.json) ctx.out.json(r);
        else if (r.unchanged) ctx.out.line(`${r.episode_dir} is as new as the store's copy of ${id}`);
        else {
          const how = r.refreshed ? "pulled again" : "pulled";
          ctx.out.line(`${how} ${id} into ${r.episode_dir} (${r.files} files, ${r.lines} lines)`);
        }
      }, { scoped: true });
    });
}

/** Registers `noema approvals`. */
export function registerApprovals(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("approvals")
    .summary("list every call waiting for approval in the fleet (shared store)")
    .description(
      "List the runs of every machine that wait for a decision, oldest first: the episode, its host, the step,\n" +
        "the policy and its reason, and the pending action. Decide with noema approve|reject ID --store URL.\n" +
        "A call already decided is not listed: a line on stderr names it until its host applies the decision.",
    )
    .option("-j, --json", "print a JSON array of {episode_id, host, task, started_at, pending}")
    .addHelpText(
      "after",
      examples(
        ["noema approvals --store postgres://noema@db/noema", "what waits, fleet-wide"],
        ["noema approve ep_01K9… --store postgres://noema@db/noema --note ok", "decide from this machine"],
      ) + STORE_HELP,
    )
    .action(async (opts, cmd) => {
      await withStore(cmd, async (s) => {
        const all = (await s.waiting(10_000)).reverse();
        const rows: CatalogRow[] = [];
        for (const { row, decision } of all) {
          if (isUnreadable(row)) {
            ctx.out.note(`noema: skipped ${row.episode_id}: its catalog row cannot be read: ${oneLine(row.error)}`);
          } else if (decision === null) rows.push(row);
        }
        // What each waits on, as its own published checkpoint says (never the catalog row's words alone).
        const waiting = [];
        for (const r of rows) {
          const pending = await storedPendingCall(s, r);
          if (pending === null) {
            ctx.out.note(
              `noema: skipped ${r.episode_id}: the checkpoint its catalog row names is not in the store ` +
                `(${oneLine(r.pending?.checkpoint_id ?? "none")}): nothing of it is shown`,
            );
            continue;
          }
          waiting.push({ episode_id: r.episode_id, host: r.host, task: r.task, started_at: r.started_at, pending });
        }
        const { unappliableDecision } = await import("../store_approvals.ts");
        for (const { row, decision: d } of all) {
          if (d === null || isUnreadable(row)) continue;
          const why = await unappliableDecision(s, row, d);
          if (why !== null) {
            // Said as it is: its host refuses it (exit 7) and the checkpoint takes no other decision.
            ctx.out.note(
              `noema: ${row.episode_id} (${oneLine(row.host)}) has a decision its host cannot apply: ${d.decision} ` +
                `by ${oneLine(deciderText(d))} on ${oneLine(d.host)} at ${oneLine(d.at)}, but ${why}: resume ` +
                `refuses it (exit 7), the run stays paused and its checkpoint takes no other decision; end it with ` +
                `noema resume ${row.episode_id} --abort on ${oneLine(row.host)}`,
            );
            continue;
          }
          ctx.out.note(
            `noema: ${row.episode_id} (${oneLine(row.host)}) no longer waits for a decision: ${d.decision} by ` +
              `${oneLine(deciderText(d))} on ` +
              `${oneLine(d.host)} at ${oneLine(d.at)}; ${
                oneLine(row.host)
              } applies it as it resumes (at once under run --wait, else: ` +
              `noema resume ${row.episode_id} there)`,
          );
        }
        if (opts.json) return ctx.out.json(waiting);
        if (waiting.length === 0) return ctx.out.note(`noema: nothing waits for approval in ${s.location}`);
        ctx.out.table(
          [
            { header: "WAITING_SINCE" },
            { header: "EPISODE_ID" },
            { header: "HOST" },
            { header: "STEP" },
            { header: "CHECKPOINT" },
            { header: "POLICY" },
            { header: "REASON · ACTION", flex: true },
          ],
          waiting.map((w) => [
            w.pending?.created_at ?? "-",
            w.episode_id,
            w.host,
            w.pending?.step_id ?? "-",
            w.pending?.checkpoint_id ?? "-",
            w.pending?.policy_id ?? "-",
            oneLine(`${w.pending?.reason ?? ""} · ${w.pending?.action.input_excerpt ?? ""}`),
          ]),
        );
      }, { scoped: true });
    });
}
