/**
 * An episode's events as the web app shows them: each one a line (number,
 * phase, summary) that expands to its whole payload, in pages of
 * {@link EVENTS_PAGE} so a log of any length opens at once. The live view
 * appends the same rows.
 *
 * @module
 */
import { textOf } from "../json.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { eventSummary } from "../cli/format.ts";
import { markup, type SafeHtml } from "../report/escape.ts";
import { clip } from "../report/excerpt.ts";
import { excerptHtml } from "../report/parts.ts";
import { readJsonl } from "../store/jsonl.ts";

/** Events per page of the events view. */
export const EVENTS_PAGE = 200;
/** Longest payload shown expanded, in characters (the raw file has all of it). */
const PAYLOAD_CHARS = 20_000;

/**
 * One event as an expandable row (every value escaped).
 *
 * @example
 * ```ts
 * import { eventRow } from "./events.ts";
 * eventRow(1, { phase: "start", payload: { task: "x" } }).value;
 * ```
 */
export function eventRow(n: number, e: Record<string, unknown>): SafeHtml {
  const payload = JSON.stringify(e.payload ?? null, null, 2);
  const time = typeof e.timestamp === "string" ? e.timestamp.slice(11, 23) : "";
  return markup`<details class="ev" id="ev-${n}"><summary><span class="n">#${n}</span> <span class="mono muted">${time}</span> <span class="ph">${
    textOf(e.phase ?? "?")
  }</span> ${eventSummary(e, 80)}</summary>${excerptHtml(clip(payload, PAYLOAD_CHARS))}</details>
`;
}

/**
 * The events of one page (1-based), their rows and how many events there are in all.
 *
 * @example
 * ```ts
 * import { eventsPage } from "./events.ts";
 * eventsPage("/r/episodes/ep_1", 1).total;
 * ```
 */
export function eventsPage(dir: string, pageNo: number): { rows: SafeHtml[]; total: number } {
  const path = join(dir, "events.jsonl");
  const rows: SafeHtml[] = [];
  let total = 0;
  if (!existsSync(path)) return { rows, total };
  const from = (pageNo - 1) * EVENTS_PAGE;
  for (const entry of readJsonl(path, { noFollow: true })) {
    total++;
    if (total <= from || total > from + EVENTS_PAGE) continue;
    if (entry.problem === undefined) rows.push(eventRow(total, entry.value));
    else rows.push(markup`<div class="ev t-bad">#${total} ${entry.message}</div>`);
  }
  return { rows, total };
}
