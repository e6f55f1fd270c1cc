/**
 * Leases of the files backend: `lease.json` in the episode's directory holds
 * the writer (host, pid), its fencing token and when it was last renewed.
 * It is read and replaced only under the episode's write lock, so taking a
 * lease, and checking a write's token, are atomic across processes.
 *
 * @module
 */
import { join } from "node:path";
import { LeaseHeldError, type LeaseOptions, type LeaseOwner } from "../shared_store.ts";

/** What `lease.json` holds. */
export interface StoredLease {
  host: string;
  pid: number;
  token: number;
  /** When it was taken or last renewed (ms since the epoch, the writer's clock). */
  renewed_at: number;
  released: boolean;
}

/**
 * The lease of an episode directory, or null.
 *
 * @example
 * ```ts
 * import { readEpisodeLease } from "./lease.ts";
 * import { readFileSync } from "node:fs";
 * readEpisodeLease((p) => JSON.parse(readFileSync(p, "utf8")), "/mnt/noema/episodes/ep_1");
 * ```
 */
export function readEpisodeLease(read: (path: string) => StoredLease | null, episodeDir: string): StoredLease | null {
  const l = read(join(episodeDir, "lease.json"));
  return l && Number.isInteger(l.token) ? l : null;
}

/**
 * Takes or renews the lease for `owner` (the caller holds the write lock);
 * returns its token. A live lease of another writer throws
 * {@link LeaseHeldError}; a released, stale (not renewed for `staleAfterMs`)
 * or dead one (`ownerGone`, same host) is taken over with the next token.
 *
 * @example
 * ```ts
 * import { takeLease } from "./lease.ts";
 * takeLease(dir, "ep_1", { host: "a", pid: 1 }, {}, read, write); // 1
 * ```
 */
export function takeLease(
  episodeDir: string,
  episodeId: string,
  owner: LeaseOwner,
  options: LeaseOptions,
  read: (path: string) => StoredLease | null,
  write: (path: string, data: string) => void,
): number {
  const staleMs = options.staleAfterMs ?? 60_000;
  const l = readEpisodeLease(read, episodeDir);
  const now = Date.now();
  const put = (token: number) => {
    const lease: StoredLease = { host: owner.host, pid: owner.pid, token, renewed_at: now, released: false };
    write(join(episodeDir, "lease.json"), JSON.stringify(lease) + "\n");
    return token;
  };
  if (l === null) return put(1);
  if (l.host === owner.host && l.pid === owner.pid && !l.released) return put(l.token); // renewed
  const gone = l.released || now - l.renewed_at >= staleMs ||
    (l.host === owner.host && (options.ownerGone?.(l.pid) ?? false));
  if (!gone) throw new LeaseHeldError(episodeId, { host: l.host, pid: l.pid });
  return put(l.token + 1);
}
