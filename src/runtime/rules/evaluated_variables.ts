/**
 * Values a command line puts into variables that bash then evaluates as code. bash evaluates a variable's value as an
 * arithmetic expression wherever a name stands in arithmetic (`$((v))`, `(( v ))`, `$[v]`, `let v`, `[[ v -eq 0 ]]`,
 * an indexed array's subscript, `${s:v}`), and an array subscript in that value runs its substitutions: `read v <<<
 * 'a[$(rm x)]'; echo $((v))` runs `rm x`. `${!v}` expands the variable `v` names (its subscript too), and `${v@P}`
 * expands `v` as a prompt (its `$( … )` runs), as it expands `PS4` under `set -x`.
 *
 * So the line's assignments are recorded with what is known of their values: a literal value is known (a
 * substitution kept as quoted text in it is read by `unwrap.ts`), as is a number from `$(( … ))` or `${#…}`; a value
 * from a substitution, another variable, `read`, `mapfile`, `printf -v`, or a `for` over words only known when it
 * runs is not. A variable holding an unknown value, or a literal naming one (`w=v`: arithmetic evaluates `v` in turn),
 * used in one of those places, makes the line unreadable: the rules fail closed. Variables set outside the line are
 * not covered (docs/rules.md).
 *
 * @module
 */
import { arithmeticEnd } from "./shell_spans.ts";
import type { ShellWord } from "./shell.ts";

/** What a line assigned to its variables, and the texts bash evaluates. */
export interface Variables {
  /** Each variable's literal values, as assigned. */
  known: Map<string, string[]>;
  /** Variables given a value only known when the line runs. */
  unknown: Set<string>;
  /** The words a `for` over words only known when it runs takes its variable's values from (`for f in *.py`). */
  loops: Map<string, string[]>;
  /** Texts evaluated as arithmetic (`$((…))`, `((…))`, `let`, `[[ … -eq … ]]`, subscripts). */
  arithmetic: string[];
  /** The inside of each `${…}`. */
  parameters: string[];
}

/**
 * Variables of a line that has read nothing yet.
 *
 * @example
 * ```ts
 * import { newVariables } from "./evaluated_variables.ts";
 * newVariables().unknown.size; // 0
 * ```
 */
export function newVariables(): Variables {
  return { known: new Map(), unknown: new Set(), loops: new Map(), arithmetic: [], parameters: [] };
}

/** A value's text without the expansions that only make numbers (`$((…))`, `${#x}`, `$#`, `$?`, `$$`, `$!`); null when one cannot be bounded. */
function withoutNumbers(text: string): string | null {
  let out = "";
  for (let i = 0; i < text.length;) {
    if (text.startsWith("$((", i)) {
      const span = arithmeticEnd(text, i + 1);
      if (span.end === undefined || span.end === -1) return null;
      i = span.end + 1;
      continue;
    }
    const m = /^\$(\{#[A-Za-z_0-9]*(\[[^\]]*\])?\}|[#?$!])/.exec(text.slice(i, i + 64));
    if (m) i += m[0].length;
    else out += text[i++];
  }
  return out;
}

/**
 * Records an assignment of `value` (the word after `=`) to `name`; `subscript` is an array element's (arithmetic).
 *
 * @example
 * ```ts
 * import { newVariables, recordAssignment } from "./evaluated_variables.ts";
 * const vars = newVariables();
 * recordAssignment(vars, "v", { text: "$(date)", dynamic: true, literal: "" });
 * vars.unknown.has("v"); // true
 * ```
 */
export function recordAssignment(vars: Variables, name: string, value: ShellWord, subscript?: string): void {
  if (subscript !== undefined) vars.arithmetic.push(subscript);
  const text = value.dynamic ? withoutNumbers(value.text) : value.text;
  if (text === null || value.dynamic && /[$`]/.test(text)) vars.unknown.add(name);
  else vars.known.set(name, [...vars.known.get(name) ?? [], text]);
}

/** Names a command's words may be (`read -r v` sets v). */
const NAME_WORD = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Records what a command does with variables: `read`, `mapfile`/`readarray`, `printf -v` and `for`/`select` over
 * words only known when it runs set them to unknown values; `let` and `[[ … ]]` evaluate arithmetic.
 *
 * @example
 * ```ts
 * import { newVariables, recordCommand } from "./evaluated_variables.ts";
 * const vars = newVariables();
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * recordCommand(vars, "read", ["read", "-r", "v"].map(w));
 * vars.unknown.has("v"); // true
 * ```
 */
export function recordCommand(vars: Variables, name: string, words: readonly ShellWord[]): void {
  const args = words.slice(1);
  if (name === "read" || name === "mapfile" || name === "readarray") {
    vars.unknown.add(name === "read" ? "REPLY" : "MAPFILE");
    for (const w of args) if (NAME_WORD.test(w.text)) vars.unknown.add(w.text);
  } else if (name === "printf" || name === "getopts") {
    const v = args.findIndex((w) => w.text === "-v");
    if (v !== -1 && args[v + 1] !== undefined) vars.unknown.add(args[v + 1].text.replace(/\[.*$/s, ""));
    if (name === "getopts") vars.unknown.add("OPTARG");
  } else if ((name === "for" || name === "select") && args[1]?.text === "in") {
    const words = args.slice(2).filter((w) => w.text !== ";" && w.text !== "do");
    if (words.some((w) => w.dynamic)) {
      vars.unknown.add(args[0].text);
      vars.loops.set(args[0].text, [...vars.loops.get(args[0].text) ?? [], ...words.map((w) => w.text)]);
    } else vars.known.set(args[0].text, [...vars.known.get(args[0].text) ?? [], ...words.map((w) => w.text)]);
  } else if (name === "let") vars.arithmetic.push(...args.map((w) => w.text));
  else if (name === "[[") {
    args.forEach((w, k) => {
      if (/^-(eq|ne|lt|le|gt|ge)$/.test(w.text)) vars.arithmetic.push(args[k - 1]?.text ?? "", args[k + 1]?.text ?? "");
    });
  } else if (/^(declare|typeset|local|export|readonly)$/.test(name) && args.some((w) => /^-[a-zA-Z]*i/.test(w.text))) {
    vars.arithmetic.push(...args.map((w) => w.text)); // declare -i v=…: the value is arithmetic
  }
}

/** A command substitution in a text (`$(…)`, not the arithmetic `$((…))`, or backquotes). */
const SUBSTITUTION = /\$\((?!\()|`/;

/** The variables bash expands as prompts (`PS4` at each command under `set -x`): their substitutions run. */
const PROMPTS = ["PS0", "PS1", "PS2", "PS3", "PS4"];

/** The names a text may evaluate (every word of identifier characters: over-counting only fails closed). */
function namesIn(text: string): string[] {
  return text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? [];
}

/** The variables whose value is unknown, or a literal naming one (arithmetic evaluates a name's value in turn). */
function tainted(vars: Variables): Set<string> {
  const out = new Set(vars.unknown);
  for (let grew = true; grew;) {
    grew = false;
    for (const [name, values] of vars.known) {
      if (out.has(name) || !values.some((v) => namesIn(v).some((n) => out.has(n)))) continue;
      out.add(name);
      grew = true;
    }
  }
  return out;
}

/** What bash evaluates in a `${…}`: the name it expands indirectly or as a prompt, and its arithmetic parts. */
function parameterUses(inner: string): { code: string | null; arithmetic: string[] } {
  const m = /^(!)?([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(.*)$/s.exec(inner);
  if (m === null) return { code: null, arithmetic: [] };
  const [, bang, name, subscript, rest] = m;
  const arithmetic = subscript ? [subscript.slice(1, -1)] : [];
  if (/^:[^-=?+]/.test(rest)) arithmetic.push(rest.slice(1)); // ${s:off:len}
  return { code: bang || /^@P/.test(rest) ? name : null, arithmetic };
}

/**
 * Why the line cannot be read, when bash evaluates a variable the line gave a value it cannot know; else null.
 *
 * @example
 * ```ts
 * import { evaluationProblem, newVariables } from "./evaluated_variables.ts";
 * const vars = newVariables();
 * vars.unknown.add("v");
 * vars.arithmetic.push("v + 1");
 * evaluationProblem(vars); // "bash evaluates v (in v + 1), whose value this line sets and is only known when it runs"
 * ```
 */
export function evaluationProblem(vars: Variables): string | null {
  const arithmetic = [...vars.arithmetic];
  for (const inner of vars.parameters) arithmetic.push(...parameterUses(inner).arithmetic);
  // A command's output put into arithmetic is evaluated as it is, like a variable's value: `$(( $(cat f) + 1 ))`
  // runs what a subscript in `f` holds (`a[$(rm x)]`), as `n=$(cat f); echo $((n))` does.
  const output = arithmetic.find((text) => SUBSTITUTION.test(text));
  if (output !== undefined) {
    return `bash evaluates a command's output (in ${output.trim()}) as arithmetic, which runs what a subscript in it holds`;
  }
  if (vars.unknown.size === 0) return null;
  const bad = tainted(vars);
  const prompt = PROMPTS.find((p) => bad.has(p));
  if (prompt !== undefined) {
    return `bash expands ${prompt} as a prompt, and this line sets it to a value only known when it runs`;
  }
  for (const inner of vars.parameters) {
    const uses = parameterUses(inner);
    if (uses.code !== null && bad.has(uses.code)) {
      return `bash expands \${${inner}}, from ${uses.code}, whose value this line sets and is only known when it runs`;
    }
  }
  for (const text of arithmetic) {
    const name = namesIn(text).find((n) => bad.has(n));
    if (name !== undefined) {
      return `bash evaluates ${name} (in ${text}), whose value this line sets and is only known when it runs`;
    }
  }
  return null;
}
