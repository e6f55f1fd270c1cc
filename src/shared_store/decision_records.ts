/**
 * Whether an episode's decision record (`approvals/<checkpoint>.json`) is the
 * shared store's decision on that checkpoint: every field the store holds, the
 * same. The store keeps a published run's one decision for the fleet, so a
 * record that says otherwise (made on a copy of the run, or by hand) must
 * neither be published as the run's decision (`noema sync`) nor pass
 * `noema store audit`.
 *
 * @module
 */
import { EXIT, NoemaError } from "../errors.ts";
import type { SharedStore, StoredDecision } from "./shared_store.ts";

/** A decision record's name in an episode: `approvals/<checkpoint>.json` (the checkpoint id), else null. */
export function recordCheckpoint(name: string): string | null {
  return /^approvals\/([^/]+)\.json$/.exec(name)?.[1] ?? null;
}

/**
 * The first field in which a decision record differs from the store's decision `d` (its name and the store's value),
 * or null when the record is `d` as a holder writes it: the decision, the decider (`by`, with or without `@host`),
 * `database_role`, `authenticated_as`, `claimed_by` and `note` (parts masked, `[REDACTED…]`, as the holder's secret
 * names may mask them), `at`, the checkpoint id, `state_hash` and, when the store has one, `checkpoint_digest`.
 *
 * @example
 * ```ts
 * import { decisionRecordDifference } from "./decision_records.ts";
 * // decisionRecordDifference(JSON.parse(text), await store.decision(id, chk)); // ["by", "ana"] or null
 * ```
 */
export function decisionRecordDifference(r: Record<string, unknown>, d: StoredDecision): [string, unknown] | null {
  const checks: [string, boolean, unknown][] = [
    ["checkpoint_id", r.checkpoint_id === d.checkpoint_id, d.checkpoint_id],
    ["decision", r.decision === d.decision, d.decision],
    ["database_role", (r.database_role ?? null) === (d.database_role ?? null), d.database_role ?? null],
    ["authenticated_as", (r.authenticated_as ?? null) === (d.authenticated_as ?? null), d.authenticated_as ?? null],
    ["by", maskedOf(r.by, d.by) || maskedOf(r.by, `${d.by}@${d.host}`), d.by],
    ["claimed_by", maskedOf(r.claimed_by ?? null, d.claimed_by ?? null), d.claimed_by ?? null],
    ["note", maskedOf(r.note ?? null, d.note), d.note],
    ["at", r.at === d.at, d.at],
    ["state_hash", r.state_hash === d.state_hash, d.state_hash],
    // A decision recorded before digests were: the holder wrote its own checkpoint's.
    [
      "checkpoint_digest",
      d.checkpoint_digest == null || r.checkpoint_digest === d.checkpoint_digest,
      d
        .checkpoint_digest,
    ],
  ];
  const bad = checks.find(([, same]) => !same);
  return bad === undefined ? null : [bad[0], bad[2]];
}

/**
 * Whether `text` (a record's words) is `stored` (the store's), or it with some parts masked (`[REDACTED…]`): the
 * holder masks a decider's words with the secret names its run recorded, which a decider elsewhere may not know.
 */
function maskedOf(text: unknown, stored: string | null): boolean {
  if (text === stored) return true;
  if (typeof text !== "string" || stored === null || !text.includes("[REDACTED")) return false;
  const parts = text.split(/\[REDACTED(?::[A-Za-z_][A-Za-z0-9_]*)?\]/);
  const pattern = parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[\\s\\S]+");
  return new RegExp(`^${pattern}$`).test(stored);
}

/**
 * Refuses (exit 7) to publish a decision record that contradicts the store: the store holds another decision on its
 * checkpoint (or this one otherwise: another decider, note or time), or holds none on a checkpoint it knows
 * (`known`: the run published that checkpoint), so that the record was made without the store. The store's catalog
 * would otherwise say the run went on as the record says while its decision log says otherwise.
 *
 * @example
 * ```ts
 * import { refuseContradictingRecord } from "./decision_records.ts";
 * // await refuseContradictingRecord(store, id, "approvals/chk_0123456789ab.json", record, true);
 * ```
 */
export async function refuseContradictingRecord(
  store: SharedStore,
  id: string,
  name: string,
  record: Record<string, unknown>,
  known: boolean,
): Promise<void> {
  const chk = recordCheckpoint(name)!;
  const d = await store.decision(id, chk);
  if (d !== null && d.pruned_at != null) return; // a tombstone: nothing left to compare
  const says = `${id}: ${name} (${String(record.decision)} by ${String(record.by)}, ${
    String(record.authenticated_as ?? "unsaid")
  })`;
  let why: string | null = null;
  if (d !== null) {
    const differs = decisionRecordDifference(record, d);
    if (differs !== null) {
      why = `${store.location} holds another decision on ${chk} (${d.decision} by ${d.by}; its ${differs[0]} is ` +
        `${JSON.stringify(differs[1])})`;
    }
  } else if (known) {
    why = `was made without the store: ${store.location} knows checkpoint ${chk} and holds no decision on it`;
  }
  if (why === null) return;
  throw new NoemaError(
    "decision_conflict",
    `${says} ${d !== null ? `is not the store's decision: ${why}` : why}. The store decides for the fleet: ` +
      `nothing of ${id} was published (a copy of a published run decided without the store, or a record written ` +
      `by hand)`,
    { exitCode: EXIT.MISMATCH },
  );
}
