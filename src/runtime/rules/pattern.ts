/**
 * Command patterns of `Bash(...)` rules: `git push:*` (the prefix, then
 * nothing or a space and anything), `git * main` (`*` is any text), a single
 * trailing ` *` that may be absent, or an exact command. Whitespace in the
 * pattern and the command is collapsed to single spaces before matching.
 *
 * Besides a full match, a pattern can say whether some command *starting*
 * with a given text could match it: used for commands whose tail is only
 * known when they run (`git $SUB`), which a deny rule must not let through.
 *
 * @module
 */

const STAR = Symbol("star");
type Token = string | typeof STAR;

/** A compiled command pattern: alternatives, each a list of characters and stars. */
export type CommandPattern = Token[][];

function tokens(text: string): Token[] {
  return [...text].map((c) => (c === "*" ? STAR : c));
}

/**
 * Collapses runs of whitespace to one space and trims.
 *
 * @example
 * ```ts
 * import { normalizeCommand } from "./pattern.ts";
 * normalizeCommand("git \t push "); // "git push"
 * ```
 */
export function normalizeCommand(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/**
 * Compiles the specifier of a `Bash(...)` rule.
 *
 * @example
 * ```ts
 * import { commandPattern, matchesCommand } from "./pattern.ts";
 * matchesCommand(commandPattern("git push:*"), "git push origin main"); // true
 * ```
 */
export function commandPattern(specifier: string): CommandPattern {
  const spec = normalizeCommand(specifier);
  if (spec.endsWith(":*")) {
    const prefix = spec.slice(0, -2).trimEnd();
    return [[...prefix], [...`${prefix} `, STAR]];
  }
  const stars = [...spec].filter((c) => c === "*").length;
  if (stars === 1 && spec.endsWith(" *")) {
    const prefix = spec.slice(0, -2);
    return [[...prefix], [...`${prefix} `, STAR]];
  }
  return [tokens(spec)];
}

const heads = new WeakMap<Token[], string>();

/** The literal text an alternative starts with (before its first star): a cheap first test. */
function head(alt: Token[]): string {
  let h = heads.get(alt);
  if (h === undefined) {
    const star = alt.indexOf(STAR);
    h = (star === -1 ? alt : alt.slice(0, star)).join("");
    heads.set(alt, h);
  }
  return h;
}

function closure(alt: Token[], states: Set<number>): Set<number> {
  for (const i of [...states]) {
    let j = i;
    while (alt[j] === STAR) states.add(++j);
  }
  return states;
}

/** The states of `alt` alive after reading `text` (an NFA: no backtracking, linear in the text). */
function run(alt: Token[], text: string): Set<number> {
  let states = closure(alt, new Set([0]));
  for (const c of text) {
    const next = new Set<number>();
    for (const i of states) {
      if (alt[i] === STAR) next.add(i);
      else if (alt[i] === c) next.add(i + 1);
    }
    states = closure(alt, next);
    if (states.size === 0) break;
  }
  return states;
}

/**
 * Whether `command` (whitespace collapsed) matches the pattern.
 *
 * @example
 * ```ts
 * import { commandPattern, matchesCommand } from "./pattern.ts";
 * matchesCommand(commandPattern("ls *"), "lsof"); // false
 * ```
 */
export function matchesCommand(pattern: CommandPattern, command: string): boolean {
  const text = normalizeCommand(command);
  return pattern.some((alt) => text.startsWith(head(alt)) && run(alt, text).has(alt.length));
}

/**
 * Whether some command starting with `prefix` could match the pattern.
 *
 * @example
 * ```ts
 * import { commandPattern, couldMatch } from "./pattern.ts";
 * couldMatch(commandPattern("git push:*"), "git "); // true: "git $SUB" may be a push
 * couldMatch(commandPattern("git push:*"), "ls "); // false
 * ```
 */
export function couldMatch(pattern: CommandPattern, prefix: string): boolean {
  const text = prefix.replace(/\s+/g, " ").trimStart();
  return pattern.some((alt) => {
    const h = head(alt);
    return (text.startsWith(h) || h.startsWith(text)) && run(alt, text).size > 0;
  });
}
