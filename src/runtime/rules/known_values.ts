/**
 * The values a word takes when it only expands a variable the line itself assigned literal values to:
 * `X='-c alias.a=!rm${IFS}x a'; git $X` runs the alias, `P='BEGIN{system("…")}'; awk "$P"` runs the command. The
 * programs whose options or program text noema reads (`git`, `awk`, `sed`, `tar --to-command`…) are read again with
 * each such word replaced by each value it may take (see `unwrap.ts`), split at blanks as an unquoted expansion is
 * and whole as a quoted one (the reader no longer knows which it was). A variable the line gave a value only known
 * when it runs, or did not assign at all, is not known here.
 *
 * @module
 */
import type { Variables } from "./evaluated_variables.ts";
import type { ShellWord } from "./shell.ts";

/** A reference to a named variable: `$X`, `${X}`. */
const REFERENCE = /\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})/g;

/**
 * The names of the variables a text expands (`$X`, `${X}`, `${X:-…}`, `${X[…]}`), each as often as it stands there.
 *
 * @example
 * ```ts
 * import { referencedNames } from "./known_values.ts";
 * referencedNames("$a/${b:-c}"); // ["a", "b"]
 * ```
 */
export function referencedNames(text: string): string[] {
  return [...text.matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]);
}

/** The most texts one word may stand for before it counts as unknown. */
const MAX_VALUES = 16;

/**
 * The literal texts `w` may expand to, or null when it expands anything but variables this line assigned only
 * literal values to (anywhere on the line: `vars` should be the whole line's, so that a value assigned later in a
 * loop or before a function is called counts too), or when the line sets `IFS` (how an unquoted value splits is then
 * not known). A word holding several references (`"${n}p"`, `"NR==$n"`) takes each combination of their values.
 *
 * @example
 * ```ts
 * import { knownValues } from "./known_values.ts";
 * import { newVariables, recordAssignment } from "./evaluated_variables.ts";
 * const vars = newVariables();
 * recordAssignment(vars, "X", { text: "push", dynamic: false, literal: "push" });
 * knownValues({ text: "$X", dynamic: true, literal: "" }, vars); // ["push"]
 * knownValues({ text: "--$X", dynamic: true, literal: "--" }, vars); // ["--push"]
 * ```
 */
export function knownValues(w: ShellWord, vars: Variables): readonly string[] | null {
  if (!w.dynamic || vars.known.has("IFS") || vars.unknown.has("IFS")) return null;
  let texts = [""];
  let at = 0;
  for (const m of w.text.matchAll(REFERENCE)) {
    const name = m[1] ?? m[2];
    const known = vars.unknown.has(name) ? undefined : vars.known.get(name);
    const values = known === undefined ? undefined : [...new Set(known)]; // `for f in a b` in two loops: a, b
    if (values === undefined || values.length === 0) return null;
    const before = w.text.slice(at, m.index);
    if (/[$`]/.test(before)) return null; // another expansion: a substitution, `$1`, `${x:-…}`
    if (texts.length * values.length > MAX_VALUES) return null;
    texts = texts.flatMap((t) => values.map((v) => t + before + v));
    at = m.index + m[0].length;
  }
  const rest = w.text.slice(at);
  if (at === 0 || /[$`]/.test(rest)) return null;
  return texts.map((t) => t + rest);
}

/** A word of an expanded value: a glob in it makes it known only up to the glob (the shell may expand it). */
function valueWord(text: string): ShellWord {
  const glob = text.search(/[*?[]/);
  return glob === -1 ? { text, dynamic: false, literal: text } : { text, dynamic: true, literal: text.slice(0, glob) };
}

/** The ways a value may stand in a command: split at blanks (unquoted), and whole (quoted) when that differs. */
function expansions(value: string): ShellWord[][] {
  const split = value.split(/[ \t\n]+/).filter((t) => t !== "").map(valueWord);
  if (split.length === 1 && split[0].text === value) return [split];
  return [split, [valueWord(value)]];
}

/**
 * The readings of `words` with every word that expands a known variable (see {@link knownValues}) replaced by each
 * way each of its values may stand there; null when no word does, or when there are more than `max` readings
 * (`tooMany` is then true: the caller fails closed).
 *
 * @example
 * ```ts
 * import { knownReadings } from "./known_values.ts";
 * import { newVariables, recordAssignment } from "./evaluated_variables.ts";
 * const vars = newVariables();
 * recordAssignment(vars, "X", { text: "-c a=b", dynamic: false, literal: "-c a=b" });
 * const w = (text: string) => ({ text, dynamic: text.startsWith("$"), literal: text.startsWith("$") ? "" : text });
 * knownReadings(["git", "$X", "a"].map(w), vars, 8).readings?.map((r) => r.map((x) => x.text).join(" "));
 * // ["git -c a=b a", "git -c a=b a"]: split, and whole (one word `-c a=b`)
 * ```
 */
export function knownReadings(
  words: readonly ShellWord[],
  vars: Variables,
  max: number,
): { readings: ShellWord[][] | null; tooMany: boolean } {
  let readings: ShellWord[][] = [[]];
  let found = false;
  for (const w of words) {
    const values = knownValues(w, vars);
    if (values === null) {
      for (const r of readings) r.push(w);
      continue;
    }
    found = true;
    const ways = values.flatMap(expansions);
    if (readings.length * ways.length > max) return { readings: null, tooMany: true };
    readings = readings.flatMap((r) => ways.map((way) => [...r, ...way]));
  }
  return { readings: found ? readings : null, tooMany: false };
}

/**
 * Whether a program's file, only known when the line runs, may be the program's own input (`/dev/stdin`, so that
 * `python3 "$(printf /dev/stdin)" <<< CODE` runs CODE): a here-document or here-string feeds it, or the path comes
 * from a command's output or a variable the line gave a value only known when it runs. A path ending in a file
 * extension (`"$D/x.py"`) is a file, and a variable set outside the line is not covered (docs/rules.md).
 *
 * @example
 * ```ts
 * import { mayBeInput } from "./known_values.ts";
 * import { newVariables } from "./evaluated_variables.ts";
 * mayBeInput({ text: "$(printf /dev/stdin)", dynamic: true, literal: "" }, newVariables(), false); // true
 * mayBeInput({ text: "$D/x.py", dynamic: true, literal: "" }, newVariables(), true); // false
 * ```
 */
export function mayBeInput(w: ShellWord, vars: Variables, heredoc: boolean): boolean {
  const file = /\.[A-Za-z0-9]{1,8}$/;
  if (!w.dynamic || file.test(w.text)) return false;
  if (heredoc || /\$\(|`/.test(w.text)) return true;
  for (const name of referencedNames(w.text)) {
    if (!vars.unknown.has(name)) continue;
    // `for f in t/*.py; do python3 "$f"; done`: each value ends as its glob does, in a file extension.
    const loop = vars.loops.get(name);
    if (loop === undefined || vars.known.has(name) || !loop.every((t) => file.test(t))) return true;
  }
  return false;
}
