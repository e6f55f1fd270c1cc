/**
 * A list whose snapshots share storage with it: taking a snapshot costs
 * nothing, and changing an entry that a snapshot shows copies one chunk of
 * {@link CHUNK} entries (and the chunk index), not the whole list.
 *
 * The state snapshot policies receive holds lists that grow with an episode
 * (plan steps, actions, facts) and whose entries sometimes change (a plan
 * step's status). Copying a 10,000-entry array whenever one step changed
 * made every step cost O(n); with chunks it costs O(n / 64 + 64).
 *
 * @module
 */

/** Entries per chunk (a power of two). */
export const CHUNK = 64;
const SHIFT = 6;
const MASK = CHUNK - 1;

/** What a snapshot of a {@link SharedList} holds: its chunks and length. Never changed once handed out. */
export interface ListSnapshot<T> {
  /** Entry `i` is `chunks[i >> 6][i & 63]`, for `i < length`. */
  readonly chunks: readonly (readonly T[])[];
  readonly length: number;
}

/**
 * Entry `i` of a snapshot.
 *
 * @example
 * ```ts
 * import { SharedList, entryAt } from "./shared_list.ts";
 * const list = new SharedList<string>();
 * list.push("a");
 * entryAt(list.snapshot(), 0); // "a"
 * ```
 */
export function entryAt<T>(s: ListSnapshot<T>, i: number): T | undefined {
  return i >= 0 && i < s.length ? s.chunks[i >> SHIFT][i & MASK] : undefined;
}

/**
 * A snapshot that is `s` with `value` appended (copies the last chunk and
 * the chunk index, not the list).
 *
 * @example
 * ```ts
 * import { appended, arraySnapshot, entryAt } from "./shared_list.ts";
 * entryAt(appended(arraySnapshot(["a"]), "b"), 1); // "b"
 * ```
 */
export function appended<T>(s: ListSnapshot<T>, value: T): ListSnapshot<T> {
  const chunks = s.chunks.slice(0, (s.length + MASK) >> SHIFT);
  const c = s.length >> SHIFT;
  chunks[c] = c < chunks.length ? [...chunks[c].slice(0, s.length & MASK), value] : [value];
  return { chunks, length: s.length + 1 };
}

/**
 * A snapshot of a plain array (its entries copied into chunks).
 *
 * @example
 * ```ts
 * import { arraySnapshot, entryAt } from "./shared_list.ts";
 * entryAt(arraySnapshot(["a", "b"]), 1); // "b"
 * ```
 */
export function arraySnapshot<T>(items: readonly T[]): ListSnapshot<T> {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) chunks.push(items.slice(i, i + CHUNK));
  return { chunks, length: items.length };
}

/**
 * The entries of `now` that are not in `before` (by identity, position by
 * position), as `[index, entry]` pairs. Chunks both snapshots share are
 * skipped whole, so a list that grew by one entry costs O(n / 64).
 *
 * @example
 * ```ts
 * import { listDelta, SharedList } from "./shared_list.ts";
 * const list = new SharedList<string>();
 * list.push("a");
 * const before = list.snapshot();
 * list.push("b");
 * listDelta(before, list.snapshot()); // [[1, "b"]]
 * ```
 */
export function listDelta<T>(before: ListSnapshot<T>, now: ListSnapshot<T>): [number, T][] {
  const out: [number, T][] = [];
  for (let c = 0, start = 0; start < now.length; c++, start += CHUNK) {
    const chunk = now.chunks[c], old = c < before.chunks.length ? before.chunks[c] : undefined;
    const end = Math.min(start + CHUNK, now.length);
    // A chunk both hold is unchanged below `before.length` (shown entries are never changed in place).
    const from = chunk === old ? Math.max(start, before.length) : start;
    for (let i = from; i < end; i++) {
      const x = chunk[i & MASK];
      if (i >= before.length || old === undefined || x !== old[i & MASK]) out.push([i, x]);
    }
  }
  return out;
}

/**
 * A growable list with cheap copy-on-write snapshots.
 *
 * @example
 * ```ts
 * import { SharedList, entryAt } from "./shared_list.ts";
 * const list = new SharedList<string>();
 * list.push("a");
 * const before = list.snapshot();
 * list.set(0, "b");
 * entryAt(before, 0); // "a"
 * entryAt(list.snapshot(), 0); // "b"
 * ```
 */
export class SharedList<T> {
  #chunks: T[][] = [];
  #length = 0;
  /** Entries below this index are shown by a snapshot: change them only in a copied chunk. */
  #shown = 0;
  /** The chunk index is shared with a snapshot. */
  #sharedIndex = false;
  /** Snapshots taken so far: chunk `c` is ours to change (copied or made since the last one) when `#ownedAt[c]` is it. */
  #epoch = 0;
  #ownedAt: number[] = [];

  /** Number of entries. */
  get length(): number {
    return this.#length;
  }

  /** Appends one entry. */
  push(value: T): void {
    this.set(this.#length, value);
  }

  /** Sets entry `i` (at most `length`: one past the end appends). */
  set(i: number, value: T): void {
    if (!Number.isInteger(i) || i < 0 || i > this.#length) throw new RangeError(`index ${i} out of 0..${this.#length}`);
    const c = i >> SHIFT;
    if (c === this.#chunks.length) {
      if (this.#sharedIndex) this.#ownIndex();
      this.#chunks.push([]);
      this.#ownedAt[c] = this.#epoch;
    } else if (i < this.#shown) this.#own(c);
    this.#chunks[c][i & MASK] = value;
    if (i === this.#length) this.#length++;
  }

  /** Drops the entries from `length` on. */
  truncate(length: number): void {
    if (length >= this.#length) return;
    // Entries past a snapshot's length are not shown by it, so shrinking changes nothing it holds;
    // later writes below #shown still copy their chunk.
    this.#length = Math.max(0, length);
    const chunks = (this.#length + MASK) >> SHIFT;
    if (chunks < this.#chunks.length) {
      if (this.#sharedIndex) this.#ownIndex();
      this.#chunks.length = chunks;
    }
  }

  /** The list as it stands, sharing storage with it (the list copies what it changes afterwards). */
  snapshot(): ListSnapshot<T> {
    this.#shown = Math.max(this.#shown, this.#length);
    this.#sharedIndex = true;
    this.#epoch++;
    return { chunks: this.#chunks, length: this.#length };
  }

  #ownIndex(): void {
    this.#chunks = this.#chunks.slice();
    this.#sharedIndex = false;
  }

  #own(c: number): void {
    if (this.#ownedAt[c] === this.#epoch) return;
    if (this.#sharedIndex) this.#ownIndex();
    this.#chunks[c] = this.#chunks[c].slice();
    this.#ownedAt[c] = this.#epoch;
  }
}
