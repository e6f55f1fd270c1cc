/**
 * Leases of the files backend: `lease.json` in the episode's directory holds
 * the writer (host, pid), its fencing token and when it was last renewed.
 * It is read and replaced only under the episode's write lock, so taking a
 * lease, and checking a write's token, are atomic across processes.
 *
 * The token is written as a decimal string and read as a bigint, exact past
 * 2^53 (a JSON number there would round, and a taken-over lease would repeat
 * its predecessor's token). A number, as an older noema wrote it, is read
 * from the file's text digit for digit.
 *
 * @module
 */
import { join } from "node:path";
import {
  type FencingToken,
  LeaseHeldError,
  type LeaseOptions,
  type LeaseOwner,
  StoreSchemaError,
} from "../shared_store.ts";

/** What `lease.json` holds, its token read exactly. */
export interface StoredLease {
  host: string;
  pid: number;
  token: FencingToken;
  /** When it was taken or last renewed (ms since the epoch, the writer's clock). */
  renewed_at: number;
  released: boolean;
}

/**
 * The lease of an episode directory, or null when it has none; `read` gives a
 * file's text, or null when it is missing. A token that is not a whole number
 * (1 or more) throws {@link StoreSchemaError} naming the file: taking the
 * lease over from 1 would repeat a token.
 *
 * @example
 * ```ts
 * import { readEpisodeLease } from "./lease.ts";
 * import { existsSync, readFileSync } from "node:fs";
 * readEpisodeLease((p) => existsSync(p) ? readFileSync(p, "utf8") : null, "/mnt/noema/episodes/ep_1");
 * ```
 */
export function readEpisodeLease(read: (path: string) => string | null, episodeDir: string): StoredLease | null {
  const path = join(episodeDir, "lease.json");
  const text = read(path);
  if (text === null) return null;
  let l: Omit<StoredLease, "token"> & { token?: unknown };
  try {
    l = JSON.parse(text);
  } catch (e) {
    throw new StoreSchemaError(`the shared store file ${path} is not valid JSON: ${(e as Error).message}`);
  }
  // A JSON number is taken from the text itself: JSON.parse rounds one past 2^53.
  const digits = typeof l.token === "number" ? /"token"\s*:\s*(\d+)\s*[,}]/.exec(text)?.[1] : l.token;
  if (typeof digits !== "string" || !/^[1-9][0-9]*$/.test(digits)) {
    throw new StoreSchemaError(`the shared store file ${path}: token is not a whole number of 1 or more`);
  }
  return { ...l, token: BigInt(digits) };
}

/**
 * `lease.json`'s text for a lease: the token as a decimal string.
 *
 * @example
 * ```ts
 * import { leaseText } from "./lease.ts";
 * leaseText({ host: "a", pid: 1, token: 2n ** 53n + 1n, renewed_at: 0, released: false });
 * // '{"host":"a","pid":1,"token":"9007199254740993","renewed_at":0,"released":false}\n'
 * ```
 */
export function leaseText(lease: StoredLease): string {
  return JSON.stringify({ ...lease, token: lease.token.toString() }) + "\n";
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
 * takeLease(dir, "ep_1", { host: "a", pid: 1 }, {}, read, write); // 1n
 * ```
 */
export function takeLease(
  episodeDir: string,
  episodeId: string,
  owner: LeaseOwner,
  options: LeaseOptions,
  read: (path: string) => string | null,
  write: (path: string, data: string) => void,
): FencingToken {
  const staleMs = options.staleAfterMs ?? 60_000;
  const l = readEpisodeLease(read, episodeDir);
  const now = Date.now();
  const put = (token: FencingToken) => {
    write(
      join(episodeDir, "lease.json"),
      leaseText({ host: owner.host, pid: owner.pid, token, renewed_at: now, released: false }),
    );
    return token;
  };
  if (l === null) return put(1n);
  if (l.host === owner.host && l.pid === owner.pid && !l.released) return put(l.token); // renewed
  const gone = l.released || now - l.renewed_at >= staleMs ||
    (l.host === owner.host && (options.ownerGone?.(l.pid) ?? false));
  if (!gone) throw new LeaseHeldError(episodeId, { host: l.host, pid: l.pid });
  return put(l.token + 1n);
}
