/**
 * Approvals in the web app: every run waiting for a decision, with its
 * pending action, the policy that asked and its reason; a decision recorded
 * exactly as `noema approve` / `noema reject` record it (bound to the
 * checkpoint and its state hash, secrets masked, the decider named by the
 * token's label); and, over local files, resuming the run on this machine.
 *
 * @module
 */
import { join } from "node:path";
import { resume } from "../drivers.ts";
import { episodesDir } from "../store/layout.ts";
import { EXIT, NoemaError } from "../errors.ts";
import { listEpisodes } from "../read/list.ts";
import { markup, type SafeHtml } from "../report/escape.ts";
import { clip } from "../report/excerpt.ts";
import { badge, excerptHtml } from "../report/parts.ts";
import { ArtifactSink } from "../runtime/artifact_sink.ts";
import type { ApprovalRecord } from "../runtime/checkpoint.ts";
import { approve, reject } from "../runtime/resume.ts";
import type { PendingRun } from "../runtime/resume.ts";
import { localPending } from "../cli/store_approvals.ts";
import { publishedTo } from "../shared_store/published.ts";
import { pulledCopy } from "../shared_store/pulled.ts";
import { publishingHost } from "../shared_store/host.ts";
import { HttpError } from "./paths.ts";
import { startFacts } from "./run_facts.ts";
import { formatMs } from "../report/metric_format.ts";
import { claimEpisode } from "../shared_store/claim.ts";
import { EpisodePublisher } from "../shared_store/publish.ts";
import type { SharedStore } from "../shared_store/shared_store.ts";

/** A run waiting for a decision, as the approvals view and `GET /api/approvals` show it. */
export interface Waiting {
  episode_id: string;
  task: string | null;
  started_at: string | null;
  checkpoint_id: string;
  kind: string;
  step_id: string;
  policy_id: string | null;
  reason: string;
  action: unknown;
  /** The machine that holds the run (the catalog's host over a store; this one for a run of the root). */
  host: string | null;
  /** When the run paused for this call (its checkpoint's `created_at`), if known. */
  waiting_since?: string | null;
  /** The run's workspace (its start event's), if known. */
  workspace?: string | null;
  /** Whether this machine holds the run, paused: it can resume it here. */
  held_here: boolean;
  /**
   * A decision already recorded and not yet used by a resume: who, when (`at`, ISO 8601, the decider's clock), and
   * on which machine (`host`; null for a decision in the root's files, whose `by` says it when made elsewhere).
   */
  decided: {
    decision: string;
    by: string;
    note: string | null;
    at: string | null;
    host: string | null;
    /** What `by` is (`database_role`, `serve_token`, `os_user`); null for a record written before it was. */
    authenticated_as?: string | null;
    /** The name the decider gave, shown beside `by`. */
    claimed_by?: string | null;
  } | null;
  /**
   * Over a shared store: why the run's catalog row cannot be read (then nothing else of it is shown, and there is
   * nothing to decide here).
   */
  unreadable?: string;
}

/**
 * How long a call has waited, as people read it (`3m05s`), or null when its start is unknown.
 *
 * @example
 * ```ts
 * import { waitedText } from "./approvals.ts";
 * waitedText("2026-01-01T00:00:00Z", Date.parse("2026-01-01T00:03:05Z")); // "3m05s"
 * ```
 */
export function waitedText(since: string | null | undefined, now: number = Date.now()): string | null {
  const t = since ? Date.parse(since) : NaN;
  return Number.isNaN(t) ? null : formatMs(Math.max(0, now - t));
}

function waitingOf(p: PendingRun, task: string | null, started: string | null): Waiting {
  const pending = p.checkpoint.pending as unknown as Record<string, unknown>;
  const str = (x: unknown) => (typeof x === "string" ? x : null);
  return {
    episode_id: p.episode_id,
    task,
    started_at: started,
    checkpoint_id: p.checkpoint.checkpoint_id,
    kind: str(pending.kind) ?? "approval",
    step_id: str(pending.step_id) ?? "",
    policy_id: str(pending.policy_id),
    reason: str(pending.reason) ?? "",
    action: pending.action ?? null,
    host: publishingHost(),
    waiting_since: str(p.checkpoint.created_at),
    workspace: startFacts(p.episode_dir).workspace,
    held_here: true,
    decided: p.approval
      ? {
        decision: p.approval.decision,
        by: p.approval.by,
        note: p.approval.note,
        at: p.approval.at,
        host: null,
        authenticated_as: p.approval.authenticated_as ?? null,
        claimed_by: p.approval.claimed_by ?? null,
      }
      : null,
  };
}

/**
 * Every local run waiting for approval, newest first (secrets in them masked as the files hold them).
 *
 * @example
 * ```ts
 * import { waitingRuns } from "./approvals.ts";
 * for (const w of waitingRuns(".noema")) console.log(w.episode_id, w.reason);
 * ```
 */
export function waitingRuns(root: string, limit = 500): Waiting[] {
  const out: Waiting[] = [];
  for (const e of listEpisodes({ root, status: ["waiting_for_approval"], limit })) {
    try {
      const p = localPending(e.episode_id, { root });
      if (p !== null) out.push(waitingOf(p, e.task, e.started_at));
    } catch {
      // no longer waiting (decided and resumed meanwhile) or unreadable: not listed
    }
  }
  return out;
}

/**
 * The run `id` waits on, or null when it waits on nothing.
 *
 * @example
 * ```ts
 * import { waitingRun } from "./approvals.ts";
 * waitingRun(".noema", "ep_01K9…")?.reason;
 * ```
 */
export function waitingRun(root: string, id: string): Waiting | null {
  try {
    const p = localPending(id, { root });
    return p === null ? null : waitingOf(p, null, null);
  } catch {
    return null;
  }
}

/** The longest note a decision over HTTP may carry (the form's `maxlength`). */
export const MAX_NOTE_CHARS = 4000;

/**
 * Refuses (400) a note over {@link MAX_NOTE_CHARS}, wherever the decision is recorded (the episode or the store).
 *
 * @example
 * ```ts
 * import { checkNote } from "./approvals.ts";
 * checkNote("looks right"); // fine
 * ```
 */
export function checkNote(note: string | null): void {
  if (note !== null && note.length > MAX_NOTE_CHARS) {
    throw new HttpError(400, "bad_note", `a note is at most ${MAX_NOTE_CHARS} characters`);
  }
}

/** A decision asked for over HTTP. */
export interface DecisionAsk {
  decision: "approved" | "rejected";
  note: string | null;
  /** The decider: the token's label, or null for the OS user (no token in force). */
  by: string | null;
  /** The checkpoint the person saw; a run that waits on another one is a 409. */
  checkpointId: string | null;
}

/**
 * Records a decision as `noema approve` / `noema reject` do and returns the
 * record as recorded (secrets masked). Errors of the decision become
 * {@link HttpError}s: 409 when the run waits on nothing or on another
 * checkpoint, or the checkpoint was already decided.
 *
 * @example
 * ```ts
 * import { decide } from "./approvals.ts";
 * decide(".noema", "ep_01K9…", { decision: "approved", note: "ok", by: "ana", checkpointId: null });
 * ```
 */
export function decide(root: string, id: string, ask: DecisionAsk): ApprovalRecord {
  const pulled = pulledCopy(root, id);
  if (pulled !== null) {
    // A copy pulled from the store is not held here: a decision here alone would never be applied.
    throw new HttpError(
      409,
      "pulled",
      `episode ${id} is a copy pulled from ${pulled.store ?? "a shared store"}: decide through that store`,
    );
  }
  const now = waitingRun(root, id);
  if (now === null) throw new HttpError(409, "not_waiting", `episode ${id} is not waiting for approval`);
  if (ask.checkpointId !== null && ask.checkpointId !== now.checkpoint_id) {
    throw new HttpError(409, "stale", `episode ${id} now waits on ${now.checkpoint_id}, not ${ask.checkpointId}`);
  }
  checkNote(ask.note);
  const store = publishedTo(root, id);
  if (store !== null) {
    // The store keeps the fleet's one decision on a published run: a server without it decides nothing on it.
    throw new HttpError(409, "published", `episode ${id} is published to ${store}: decide through that store`);
  }
  // The token's label is the authenticated decider; without tokens in force, the OS user running the server.
  // The checkpoint the person saw: a run that reached another one meanwhile is refused, not decided on (409).
  const options = {
    root,
    note: ask.note ?? undefined,
    servedBy: ask.by ?? undefined,
    checkpointId: ask.checkpointId ?? undefined,
  };
  try {
    const record = (ask.decision === "approved" ? approve : reject)(id, options);
    return ArtifactSink.forEpisode(join(episodesDir(root), id)).mask(record);
  } catch (e) {
    const conflict = e instanceof NoemaError &&
      (e.exitCode === EXIT.CONSUMED || e.exitCode === EXIT.NO_CHECKPOINT || e.exitCode === EXIT.MISMATCH);
    if (conflict) {
      throw new HttpError(409, (e as NoemaError).code, (e as NoemaError).message);
    }
    throw e;
  }
}

/**
 * Whether run `id`, paused here, has a decision on the checkpoint it waits on, so a resume can take it on: the
 * episode's own, or with a store the store's (the one a resume applies; a record made here without it does not
 * count, see `store_approvals.ts`).
 *
 * @example
 * ```ts
 * import { decisionTaken } from "./approvals.ts";
 * await decisionTaken(".noema", "ep_01K9…"); // false until approve or reject
 * ```
 */
export async function decisionTaken(root: string, id: string, store?: SharedStore): Promise<boolean> {
  let pending;
  try {
    pending = localPending(id, { root });
  } catch {
    return false;
  }
  if (pending === null) return false;
  if (store === undefined) return pending.approval !== null;
  return (await store.decision(id, pending.checkpoint.checkpoint_id)) !== null;
}

/**
 * Whether this machine holds run `id`, paused at a checkpoint (so it can resume it).
 *
 * @example
 * ```ts
 * import { heldHere } from "./approvals.ts";
 * heldHere(".noema", "ep_01K9…"); // false for a run of another machine, or one not paused
 * ```
 */
export function heldHere(root: string, id: string): boolean {
  try {
    return localPending(id, { root }) !== null;
  } catch {
    return false;
  }
}

/** Runs resumed by this server and not finished yet. */
const resuming = new Set<string>();

/**
 * Resumes a decided run on this machine, in this process, as `noema resume`
 * would; returns once it started (the run goes on; its page shows it live). A
 * second resume of the same run while one goes on is a 409. With a shared
 * store, the run is claimed first (see `claimEpisode`): a run another root or
 * process holds (a `run --wait` waiting for this decision), or a copy the
 * store has gone on without, is a 409 and nothing runs; once the resume ends,
 * what it wrote is published.
 *
 * @example
 * ```ts
 * import { startResume } from "./approvals.ts";
 * await startResume(".noema", "ep_01K9…", (m) => console.error(m));
 * ```
 */
export async function startResume(
  root: string,
  id: string,
  log: (message: string) => void,
  store?: SharedStore,
): Promise<void> {
  if (resuming.has(id)) throw new HttpError(409, "resuming", `episode ${id} is being resumed`);
  resuming.add(id);
  try {
    if (store) await claimEpisode(store, root, id);
  } catch (e) {
    const refused = e instanceof NoemaError && e.exitCode === EXIT.LOCKED;
    if (refused || !(e instanceof NoemaError && ["store_unreachable", "store_timeout"].includes(e.code))) {
      resuming.delete(id);
      if (refused) throw new HttpError(409, e.code, e.message);
      throw e;
    }
    log(`noema serve: ${e.message}; resuming ${id} locally`);
  }
  resume(id, { root }).then(
    (r) => log(`noema serve: resumed ${id}: ${r.status}${r.outcome ? ` (${r.outcome})` : ""}`),
    (e) => log(`noema serve: resuming ${id} failed: ${(e as Error).message}`),
  ).then(() => store && new EpisodePublisher(store, join(episodesDir(root), id), id).publish())
    .catch((e) => log(`noema serve: publishing ${id} failed: ${(e as Error).message}; noema sync publishes it`))
    .finally(() => resuming.delete(id));
}

/** A run the store lists as waiting whose catalog row cannot be read: its id and why, no form. */
function unreadablePanel(episodeId: string, error: string): SafeHtml {
  return markup`<div class="approval unreadable" data-id="${episodeId}"><h3><code>${episodeId}</code> ${
    badge("unreadable", "unreadable")
  }</h3><p class="t-bad">Its catalog row cannot be read: ${error}. Nothing of it is shown, and nothing can be decided here.</p></div>`;
}

/** What was decided: by whom, on which machine, when, with the note. */
function decisionLine(d: NonNullable<Waiting["decided"]>): SafeHtml {
  const how = [
    d.authenticated_as ? `authenticated as ${d.authenticated_as.replace("_", " ")}` : null,
    d.claimed_by && d.claimed_by !== d.by ? `claimed: ${d.claimed_by}` : null,
  ].filter(Boolean).join("; ");
  return markup`${badge(d.decision, d.decision === "approved" ? "ok" : "vetoed")} by <b>${d.by}</b>${
    d.host ? markup` on <b>${d.host}</b>` : ""
  }${d.at ? markup` at <time datetime="${d.at}">${d.at.replace("T", " ").slice(0, 19)} UTC</time>` : ""}${
    how ? markup` <span class="muted decider">(${how})</span>` : ""
  }${d.note ? markup` — ${d.note}` : ""}`;
}

/** The most characters of a pending action an approval card shows (its middle cut beyond that, with a link). */
const ACTION_SHOWN = 64 * 1024;

/**
 * The decision form of a waiting run (or what was decided, waiting for a resume).
 *
 * @example
 * ```ts
 * import { approvalPanel, waitingRun } from "./approvals.ts";
 * const w = waitingRun(".noema", "ep_01K9…");
 * if (w) approvalPanel(w).value;
 * ```
 */
export function approvalPanel(w: Waiting, opts: { heading?: boolean } = {}): SafeHtml {
  if (w.unreadable !== undefined) return unreadablePanel(w.episode_id, w.unreadable);
  const id = encodeURIComponent(w.episode_id);
  // What the decider approves is shown whole up to 64 KiB; longer, the card says so and links the whole of it.
  const shown = clip(JSON.stringify(w.action, null, 2), ACTION_SHOWN);
  const action = shown.cut === 0
    ? excerptHtml(shown)
    : markup`${excerptHtml(shown)}<p class="warn">The pending action is
longer than shown here: <a href="/episodes/${id}/files/checkpoints/${
      encodeURIComponent(w.checkpoint_id)
    }.json">read the whole of it</a> before you decide.</p>`;
  const title = opts.heading === false
    ? ""
    : markup`<h3><a href="/episodes/${id}"><code>${w.episode_id}</code></a> ${
      w.task !== null ? markup`<span class="muted">${w.task}</span>` : ""
    }</h3>`;
  const decided = w.decided
    ? markup`<p class="decided">${decisionLine(w.decided)}</p>${
      w.held_here
        ? markup`<p>The run waits for a resume.</p>
<form method="post" action="/approvals/${id}/resume"><input type="hidden" name="checkpoint" value="${w.checkpoint_id}">
<button type="submit">Resume the run on this machine</button></form>`
        : markup`<p class="muted">The machine that holds the run (${
          w.host ?? "-"
        }) applies it: at once when it waits for it (run --wait), else at its next noema resume.</p>`
    }`
    : markup`<form method="post" action="/approvals/${id}/decide">
<input type="hidden" name="checkpoint" value="${w.checkpoint_id}">
<label for="note-${w.episode_id}" class="muted">Note (recorded with the decision)</label>
<textarea id="note-${w.episode_id}" name="note" maxlength="4000"></textarea>
<div class="actions"><button class="approve" name="decision" value="approved" type="submit">Approve</button>
<button class="reject" name="decision" value="rejected" type="submit">Reject</button>
<label><input type="checkbox" name="resume" value="1" checked> then resume the run on this machine</label></div></form>`;
  return markup`<div class="approval" data-id="${w.episode_id}">${title}
<dl class="facts"><dt>waiting</dt><dd class="waited">${waitedText(w.waiting_since) ?? "-"}${
    w.waiting_since
      ? markup` <span class="muted">since <time datetime="${w.waiting_since}">${
        w.waiting_since.replace("T", " ").slice(0, 19)
      } UTC</time></span>`
      : ""
  }</dd><dt>host</dt><dd>${w.host ?? "-"}</dd><dt>workspace</dt><dd class="workspace">${
    w.workspace ? markup`<code>${w.workspace}</code>` : "-"
  }</dd><dt>step</dt><dd><code>${w.step_id}</code> (${w.kind})</dd>
<dt>policy</dt><dd>${w.policy_id ?? "-"}</dd><dt>reason</dt><dd>${w.reason}</dd>
<dt>checkpoint</dt><dd><code>${w.checkpoint_id}</code></dd></dl>
<details open><summary>Pending action</summary>${action}</details>
${decided}</div>`;
}
