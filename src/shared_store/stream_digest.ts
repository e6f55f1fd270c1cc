/**
 * The digest of a stored stream as the file its lines make: each line's
 * exact bytes and a newline, in `seq` order, hashed page by page so memory
 * stays bounded whatever the stream's length. It equals the `sha256` the
 * episode's `manifest.json` lists for the stream when the shared copy is
 * whole: no line missing, shifted, duplicated or changed.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { StreamDigest } from "./shared_store.ts";

/** Lines read per page. @default {2000} */
const PAGE = 2000;
const NEWLINE = new Uint8Array([10]);

/**
 * Hashes a stream read through `readLines(fromSeq, limit)` (a store's
 * `readLines` for one episode and stream), from line 1 to its end.
 *
 * @example
 * ```ts
 * import { digestByPages } from "./stream_digest.ts";
 * const d = await digestByPages((from, n) => store.readLines("ep_1", "events.jsonl", from, n), lastSeq);
 * d.sha256; // "sha256:…"
 * ```
 *
 * @param lastSeq the highest `seq` stored, reported as {@link StreamDigest.last_seq}
 */
export async function digestByPages(
  readLines: (fromSeq: number, limit: number) => Promise<Uint8Array[]>,
  lastSeq: number,
): Promise<StreamDigest> {
  const hash = createHash("sha256");
  let lines = 0, size = 0;
  for (;;) {
    const page = await readLines(lines + 1, PAGE);
    for (const l of page) {
      hash.update(l);
      hash.update(NEWLINE);
      size += l.length + 1;
    }
    lines += page.length;
    if (page.length < PAGE) break;
  }
  return { lines, last_seq: lastSeq, size_bytes: size, sha256: `sha256:${hash.digest("hex")}` };
}
