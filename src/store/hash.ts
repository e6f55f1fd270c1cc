/**
 * Digests: `sha256:<hex>` of raw bytes, of a file (streamed), and of a JSON
 * value in RFC 8785 canonical form.
 *
 * @module
 */
import { nodeCrypto } from "../builtins.ts";
import { closeSync, readSync } from "node:fs";
import { openRegularFile } from "./regular_file.ts";
import { Buffer } from "node:buffer";
import { canonicalJson } from "./canonical_json.ts";

export { canonicalJson };

/** Bun's one-call SHA-256, when running under Bun. */
const bunSha256 = (globalThis as { Bun?: { SHA256?: { hash(data: string | Uint8Array, encoding: "hex"): string } } })
  .Bun?.SHA256;

/**
 * `sha256:<hex>` of bytes or of a string's UTF-8 bytes.
 *
 * @example
 * ```ts
 * import { sha256 } from "noema";
 * sha256(""); // "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
 * ```
 */
export function sha256(data: string | Uint8Array): string {
  // Bun's one-call SHA-256 costs a third of a node:crypto Hash object (every governed call hashes its state).
  if (bunSha256) return "sha256:" + bunSha256.hash(data, "hex");
  return "sha256:" + nodeCrypto().createHash("sha256").update(data).digest("hex");
}

/** Size and digest of a file. */
export interface FileDigest {
  /** Bytes in the file. */
  size_bytes: number;
  /** `sha256:<hex>` of its raw bytes. */
  sha256: string;
}

/** The read buffer of {@link sha256File} (allocated at the first call). */
let readBuffer: Buffer | undefined;

/**
 * Hashes a file in 1 MiB chunks (never reads it whole into memory), read
 * into one buffer kept for every call of this thread; with `limit`, only its
 * first `limit` bytes (fewer when the file is shorter: `size_bytes` says so).
 *
 * @example
 * ```ts
 * import { sha256File } from "noema";
 * const { size_bytes, sha256 } = sha256File("/etc/hostname");
 * sha256File("/etc/hostname", 4).size_bytes; // at most 4
 * ```
 */
export function sha256File(path: string, limit: number = Infinity): FileDigest {
  const fd = openRegularFile(path); // a FIFO would block, a device never end
  try {
    return sha256Fd(fd, limit);
  } finally {
    closeSync(fd);
  }
}

/**
 * Hashes the file open at `fd` from its first byte to its end (or to its
 * first `limit` bytes), as {@link sha256File} does; the fd's own position is left as it was (reads
 * name their positions), so the caller can read the same bytes again.
 *
 * @example
 * ```ts
 * import { closeSync, openSync } from "node:fs";
 * import { sha256Fd } from "./hash.ts";
 * const fd = openSync("/etc/hostname", "r");
 * const { sha256 } = sha256Fd(fd);
 * closeSync(fd);
 * ```
 */
export function sha256Fd(fd: number, limit: number = Infinity): FileDigest {
  const hash = nodeCrypto().createHash("sha256");
  // One read buffer for every call of this thread (the function is synchronous, so never in use twice): a new
  // 1 MiB buffer per file made the manifest of each episode allocate megabytes, a garbage collection each time.
  const buf = readBuffer ??= Buffer.allocUnsafe(1 << 20);
  let size = 0;
  let n: number;
  while (size < limit && (n = readSync(fd, buf, 0, Math.min(buf.length, limit - size), size)) > 0) {
    hash.update(buf.subarray(0, n));
    size += n;
  }
  return { size_bytes: size, sha256: "sha256:" + hash.digest("hex") };
}

/**
 * `sha256:` of a value's canonical JSON: the same for equal values whatever
 * their key order.
 *
 * @example
 * ```ts
 * import { canonicalHash } from "noema";
 * canonicalHash({ a: 1, b: 2 }) === canonicalHash({ b: 2, a: 1 }); // true
 * ```
 */
export function canonicalHash(value: unknown): string {
  return sha256(canonicalJson(value));
}
