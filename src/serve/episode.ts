/**
 * The episode view: the report's one rendering of an episode (header, plan
 * with step statuses, verdicts, actions, verification and diff, metrics,
 * timeline), with the decision form while it waits for approval, its
 * learning proposals, links to every event (paged, each expanding to its
 * payload) and to its raw files, and new events appended live.
 *
 * @module
 */
import { lstatSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { markup, type SafeHtml } from "../report/escape.ts";
import { clip } from "../report/excerpt.ts";
import { reportSections } from "../report/html.ts";
import { badge, excerptHtml } from "../report/parts.ts";
import { readJsonFile } from "../store/json_file.ts";
import { readJsonl } from "../store/jsonl.ts";
import { approvalPanel, type Waiting } from "./approvals.ts";
import { page } from "./layout.ts";
import { cachedReport } from "./report_cache.ts";
import { overview } from "./episode_overview.ts";
import { readModelTurns } from "./model_turns.ts";

/** Steps shown per page of the plan: a 10,000-step episode opens at once, a page at a time. */
export const STEPS_PAGE = 200;

function stepsPager(id: string, at: number, pages: number, total: number): SafeHtml {
  if (pages === 1) return markup``;
  const link = (n: number, text: string) =>
    n >= 1 && n <= pages && n !== at
      ? markup`<a href="/episodes/${encodeURIComponent(id)}?steps=${n}#steps">${text}</a>`
      : markup`<span class="muted">${text}</span>`;
  const from = (at - 1) * STEPS_PAGE + 1, to = Math.min(total, at * STEPS_PAGE);
  return markup`<div class="pager" id="steps-pager">${
    link(at - 1, "← earlier steps")
  }<span>steps ${from}–${to} of ${total} (page ${at} of ${pages})</span>${link(at + 1, "later steps →")}</div>`;
}

/** Learning records shown on the page (the raw file has them all). */
const LEARN_SHOWN = 50;

function learning(dir: string): SafeHtml {
  const rows: SafeHtml[] = [];
  let total = 0;
  try {
    for (const e of readJsonl(join(dir, "learn.jsonl"), { noFollow: true })) {
      total++;
      if (rows.length >= LEARN_SHOWN || e.problem !== undefined) continue;
      const v = e.value;
      const kind = String(v.kind ?? v.type ?? v.record_type ?? "record");
      rows.push(
        markup`<details><summary><b>${kind}</b> ${String(v.summary ?? v.text ?? v.proposal ?? "")}</summary>${
          excerptHtml(clip(JSON.stringify(v, null, 2), 4000))
        }</details>`,
      );
    }
  } catch { /* no learn.jsonl */ }
  if (total === 0) return markup``;
  const more = total > rows.length ? markup`<p class="muted">… ${total - rows.length} more in learn.jsonl</p>` : "";
  return markup`<section id="learning"><h2>Learning proposals</h2>${rows}${more}</section>`;
}

/** The decisions recorded on the episode's checkpoints (approvals/*.json): who, what, when, why. */
function decisions(dir: string): SafeHtml {
  const rows: SafeHtml[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(join(dir, "approvals")).filter((n) => n.endsWith(".json")).sort();
  } catch { /* none */ }
  for (const name of names.slice(0, 100)) {
    try {
      if (lstatSync(join(dir, "approvals", name)).isSymbolicLink()) continue;
      const a = readJsonFile(join(dir, "approvals", name), join(dir, "approvals", name), { noFollow: true });
      const decision = String(a.decision ?? "?");
      rows.push(
        markup`<tr><td><code>${String(a.checkpoint_id ?? name)}</code></td><td>${
          badge(decision, decision === "approved" ? "ok" : "vetoed")
        }</td><td class="decider">${String(a.by ?? "-")}</td><td class="mono">${
          String(a.at ?? "-")
        }</td><td class="note">${typeof a.note === "string" ? a.note : "-"}</td><td>${
          a.consumed_at ? "used by a resume" : "not used yet"
        }</td></tr>`,
      );
    } catch { /* an unreadable decision: validate reports it */ }
  }
  if (rows.length === 0) return markup``;
  return markup`<section id="decisions"><h2>Decisions</h2><table><tr><th>checkpoint</th><th>decision</th><th>by</th><th>at</th><th>note</th><th></th></tr>${rows}</table></section>`;
}

/** The episode's files, two levels deep, links excluded. */
function rawFiles(dir: string, id: string): SafeHtml {
  const items: SafeHtml[] = [];
  const walk = (at: string, prefix: string[], depth: number) => {
    for (const d of readdirSync(at, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (items.length >= 200) return;
      const parts = [...prefix, d.name];
      if (d.isDirectory() && depth < 2) walk(join(at, d.name), parts, depth + 1);
      else if (d.isFile()) {
        const href = `/episodes/${encodeURIComponent(id)}/files/${parts.map(encodeURIComponent).join("/")}`;
        items.push(markup`<li><a href="${href}"><code>${parts.join("/")}</code></a></li>`);
      }
    }
  };
  walk(dir, [], 1);
  return markup`<section id="files"><h2>Raw files</h2><ul>${items}</ul></section>`;
}

/**
 * The episode page of `id` in `dir` (already checked to lie inside the root).
 *
 * @example
 * ```ts
 * import { episodePage } from "./episode.ts";
 * episodePage("ep_1", ".noema/episodes/ep_1", { approvals: true, waiting: null, live: true });
 * ```
 */
export function episodePage(
  id: string,
  dir: string,
  opts: { approvals: boolean; stepsPage?: number; waiting: Waiting | null; live: boolean },
): string {
  let bytes = 0;
  try {
    if (!lstatSync(join(dir, "events.jsonl")).isSymbolicLink()) bytes = statSync(join(dir, "events.jsonl")).size;
  } catch { /* no events yet */ }
  const m = cachedReport(id, dir);
  const pages = Math.max(1, Math.ceil(m.steps.length / STEPS_PAGE));
  const at = Math.min(Math.max(1, opts.stepsPage ?? 1), pages);
  const waiting = opts.approvals ? opts.waiting : null;
  const eid = encodeURIComponent(id);
  const body =
    markup`<p class="muted"><a href="/">Runs</a> / <code>${id}</code> · <a href="/episodes/${eid}/events">All events</a> · <a href="#files">Raw files</a> · <a href="/api/episodes/${eid}">JSON</a></p>
${
      waiting !== null
        ? markup`<section id="approval"><h2>${waiting.decided ? "Decided" : "Waiting for approval"}</h2>${
          approvalPanel(waiting, { heading: false })
        }</section>`
        : ""
    }
${decisions(dir)}
${
      reportSections(m, {
        steps: [(at - 1) * STEPS_PAGE, at * STEPS_PAGE],
        stepsNav: stepsPager(id, at, pages, m.steps.length),
        overview: overview(m, m.steps.slice((at - 1) * STEPS_PAGE, at * STEPS_PAGE), readModelTurns(dir), pages > 1),
      })
    }
<section id="live-section"><h2>New events</h2><p class="muted"><span id="live-count">none yet</span> since this page opened (they appear as the run writes them).</p>
<div id="live-events"></div></section>
${learning(dir)}
${rawFiles(dir, id)}
<form class="filters" method="get" action="/compare"><input type="hidden" name="a" value="${id}">
<label>Compare with episode<input name="b" required size="34" placeholder="ep_…"></label><button type="submit">Compare</button></form>`;
  const lifecycle = m.lifecycle === "terminal" ? "t" : "n";
  return page({
    title: `${id} · ${m.status}`,
    current: "episode",
    body,
    live: opts.live ? `/api/live/episodes/${eid}?offset=${bytes}&seen=${lifecycle}&steps=${at}` : undefined,
    approvals: opts.approvals,
  });
}
