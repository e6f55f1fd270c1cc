/**
 * A process that decides one checkpoint in a shared store, for the tests
 * that race deciders across processes: `store_decider.ts URL EPISODE
 * CHECKPOINT DECISION BY`. Exits 0 when its decision was recorded, 8 when the
 * checkpoint already had one (as `noema approve` does), 1 otherwise.
 *
 * @module
 */
import process from "node:process";
import { openSharedStore } from "../../src/shared_store/open.ts";
import { AlreadyDecidedError } from "../../src/shared_store/shared_store.ts";

const [url, episode, checkpoint, decision, by] = process.argv.slice(2);
const store = await openSharedStore(url);
let code = 0;
try {
  await store.decide({
    episode_id: episode,
    checkpoint_id: checkpoint,
    state_hash: "sha256:" + "0".repeat(64),
    decision: decision as "approved" | "rejected",
    by,
    note: null,
    host: `host-${by}`,
    at: new Date().toISOString(),
  });
} catch (e) {
  code = e instanceof AlreadyDecidedError ? 8 : 1;
  if (code === 1) console.error(e);
} finally {
  await store.close();
}
process.exit(code);
