/**
 * The few ANSI styles the CLI uses, as functions that are the identity when
 * colour is off. The same escape sequences as picocolors (including its
 * handling of a style nested in the same style), without its cost at start-up:
 * picocolors reads `process.stdout.isTTY` when it is imported, which builds
 * the stdout stream, about 8 ms of a cold start that never uses it (the CLI
 * writes with `writeSync`).
 *
 * @module
 */

/** A style: wraps a text in its escape sequences (or returns it unchanged when colour is off). */
export type Style = (text: string) => string;

/** The styles, and whether they colour anything. */
export interface Colors {
  readonly isColorSupported: boolean;
  readonly bold: Style;
  readonly dim: Style;
  readonly red: Style;
  readonly green: Style;
  readonly yellow: Style;
  readonly cyan: Style;
}

/** A style: `open` + text + `close`, where a `close` inside the text is followed by `replace` (so it stays styled). */
function style(open: string, close: string, replace: string = open): Style {
  return (input) => {
    const text = String(input);
    let index = text.indexOf(close, open.length);
    if (index === -1) return open + text + close;
    let out = "", cursor = 0;
    do {
      out += text.substring(cursor, index) + replace;
      cursor = index + close.length;
      index = text.indexOf(close, cursor);
    } while (index !== -1);
    return open + out + text.substring(cursor) + close;
  };
}

const plain: Style = (text) => String(text);

/**
 * The styles, on or off.
 *
 * @example
 * ```ts
 * import { createColors } from "./colors.ts";
 * createColors(true).red("no"); // "\x1b[31mno\x1b[39m"
 * createColors(false).red("no"); // "no"
 * ```
 */
export function createColors(enabled: boolean): Colors {
  const s = (open: string, close: string, replace?: string) => enabled ? style(open, close, replace) : plain;
  return {
    isColorSupported: enabled,
    bold: s("\x1b[1m", "\x1b[22m", "\x1b[22m\x1b[1m"),
    dim: s("\x1b[2m", "\x1b[22m", "\x1b[22m\x1b[2m"),
    red: s("\x1b[31m", "\x1b[39m"),
    green: s("\x1b[32m", "\x1b[39m"),
    yellow: s("\x1b[33m", "\x1b[39m"),
    cyan: s("\x1b[36m", "\x1b[39m"),
  };
}
