/**
 * The approvals queue: the calls waiting for a decision, oldest wait first,
 * each with how long it has waited, its host and its workspace; below it,
 * the calls decided and not yet resumed (a decided call leaves the queue at
 * once: its card shows the decision instead of the form).
 *
 * @module
 */
import { markup, type SafeHtml } from "../report/escape.ts";
import { approvalPanel, type Waiting } from "./approvals.ts";

const since = (w: Waiting) => (w.waiting_since ? Date.parse(w.waiting_since) : Infinity);

/**
 * The queue and the decided calls, as the approvals page shows them (and its live updates).
 *
 * @example
 * ```ts
 * import { approvalsQueue } from "./approvals_queue.ts";
 * approvalsQueue([]).value; // "… Nothing waits for a decision …"
 * ```
 */
export function approvalsQueue(waiting: readonly Waiting[]): SafeHtml {
  const open = waiting.filter((w) => w.decided === null || w.unreadable !== undefined)
    .sort((a, b) => since(a) - since(b));
  const decided = waiting.filter((w) => w.decided !== null && w.unreadable === undefined);
  const queue = open.length
    ? open.map((w) => approvalPanel(w))
    : markup`<p class="muted">Nothing waits for a decision.</p>`;
  const done = decided.length
    ? markup`<h2>Decided, waiting for a resume (${decided.length})</h2><div id="decided">${
      decided.map((w) => approvalPanel(w))
    }</div>`
    : "";
  return markup`<h2>Waiting for a decision (${open.length})</h2><div id="queue">${queue}</div>${done}`;
}
