/**
 * ULIDs (https://github.com/ulid/spec): 26 Crockford base-32 characters, a
 * 48-bit millisecond time and 80 random bits, sorting by time. A monotonic
 * generator keeps its ids strictly increasing: within one millisecond (or
 * when the clock steps back) it adds 1 to the previous random part.
 *
 * Written here rather than taken from the `ulid` package because every event
 * gets one: this generator draws random bytes once per millisecond and
 * encodes only what changed, where the package's encoded all 26 characters
 * for each id.
 *
 * @module
 */

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const TIME_MAX = 2 ** 48 - 1;
const HALF = 2 ** 40;

/** The two characters of every 10-bit number. */
const PAIRS: readonly string[] = Array.from({ length: 1024 }, (_, i) => ALPHABET[i >> 5] + ALPHABET[i & 31]);

/** Eight characters for a 40-bit number. */
function encode40(n: number): string {
  const high = Math.floor(n / 2 ** 20), low = n % 2 ** 20;
  return PAIRS[high >> 10] + PAIRS[high & 1023] + PAIRS[low >> 10] + PAIRS[low & 1023];
}

/** Ten characters for a 48-bit time: its top 10 bits (of 50), then the low 40. */
function encodeTime(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0 || ms > TIME_MAX) throw new RangeError(`ULID time out of range: ${ms}`);
  return PAIRS[Math.floor(ms / HALF)] + encode40(ms % HALF);
}

/** A 40-bit number from five random bytes. */
function random40(bytes: Uint8Array, at: number): number {
  return bytes[at] * 2 ** 32 + ((bytes[at + 1] << 24) >>> 0) + (bytes[at + 2] << 16) + (bytes[at + 3] << 8) +
    bytes[at + 4];
}

/**
 * A function returning strictly increasing ULIDs (for `now`, default the
 * clock). Throws a `RangeError` if more than 2^80 ids are asked for within
 * one millisecond. `random` fills the 10 random bytes of each new
 * millisecond (Web Crypto by default).
 *
 * @example
 * ```ts
 * import { monotonicUlid } from "./ulid.ts";
 * const next = monotonicUlid();
 * const a = next(), b = next();
 * a < b; // true
 * ```
 */
export function monotonicUlid(
  random: (bytes: Uint8Array) => Uint8Array = (b) => crypto.getRandomValues(b),
): (now?: number) => string {
  let lastTime = -1, time = "", high = 0, low = 0, highText = "";
  return (now = Date.now()) => {
    if (now > lastTime) {
      time = encodeTime(now);
      lastTime = now;
      const bytes = random(new Uint8Array(10));
      high = random40(bytes, 0);
      low = random40(bytes, 5);
      highText = encode40(high);
    } else if (++low === HALF) {
      low = 0;
      if (++high === HALF) throw new RangeError("ULID random part overflowed within one millisecond");
      highText = encode40(high);
    }
    return time + highText + encode40(low);
  };
}

/**
 * The millisecond time of a ULID, or null when the text is not one.
 *
 * @example
 * ```ts
 * import { ulidTime } from "./ulid.ts";
 * ulidTime("01ARYZ6S41TSV4RRFFQ69G5FAV"); // 1469918176385
 * ```
 */
export function ulidTime(id: string): number | null {
  if (!/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/.test(id)) return null;
  let ms = 0;
  for (let i = 0; i < 10; i++) ms = ms * 32 + ALPHABET.indexOf(id[i]);
  return ms;
}
