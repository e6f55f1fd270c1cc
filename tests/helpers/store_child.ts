/**
 * A process that works on a shared store, for the tests that race processes:
 *
 * - `store_child.ts URL decide EPISODE CHECKPOINT DECISION BY`: exits 0 when
 *   its decision was recorded, 8 when the checkpoint already had one (as
 *   `noema approve` does), 1 otherwise;
 * - `store_child.ts URL append EPISODE STREAM WRITER COUNT`: appends lines
 *   `{"w":WRITER,"n":1}` … `{"w":WRITER,"n":COUNT}` in batches of 3, each
 *   after the last line stored (by anyone); a batch that lost the race to
 *   another writer (a conflict) is sent again after the new last line.
 *
 * @module
 */
import process from "node:process";
import { openSharedStore } from "../../src/shared_store/open.ts";
import { AlreadyDecidedError, type SharedStore, StoreConflictError } from "../../src/shared_store/shared_store.ts";

async function decide(store: SharedStore, [episode, checkpoint, decision, by]: string[]): Promise<number> {
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
    return 0;
  } catch (e) {
    if (e instanceof AlreadyDecidedError) return 8;
    throw e;
  }
}

async function append(store: SharedStore, [episode, stream, writer, count]: string[]): Promise<number> {
  const enc = new TextEncoder();
  for (let n = 1; n <= Number(count); n += 3) {
    const lines = [];
    for (let i = n; i < n + 3 && i <= Number(count); i++) lines.push(enc.encode(`{"w":"${writer}","n":${i}}`));
    for (;;) {
      try {
        await store.appendLines(episode, stream, (await store.lineCount(episode, stream)) + 1, lines);
        break;
      } catch (e) {
        if (!(e instanceof StoreConflictError)) throw e; // another writer took that line: after it, then
      }
    }
  }
  return 0;
}

const [url, op, ...args] = process.argv.slice(2);
const store = await openSharedStore(url);
let code = 1;
try {
  code = await (op === "decide" ? decide : append)(store, args);
} catch (e) {
  console.error(e);
} finally {
  await store.close();
}
process.exit(code);
