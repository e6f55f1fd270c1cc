/**
 * Values a command line puts into variables that bash then evaluates as code. bash evaluates a variable's value as an
 * arithmetic expression wherever a name stands in arithmetic (`$((v))`, `(( v ))`, `$[v]`, `let v`, `[[ v -eq 0 ]]`,
 * an indexed array's subscript, `${s:v}`), and an array subscript in that value runs its substitutions: `read v <<<
 * 'a[$(rm x)]'; echo $((v))` runs `rm x`. `${!v}` expands the variable `v` names (its subscript too), and `${v@P}`
 * expands `v` as a prompt (its `$( … )` runs), as it expands `PS4` under `set -x`.
 *
 * A prompt is decoded before it is expanded: `\044` becomes `$`, so `A='\044(rm x)'; echo "${A@P}"` runs `rm x`.
 * And a name bash takes from a word (`test -v`, `[[ -v`, `declare`, `local`, `export`, `printf -v`, `read`, `unset`,
 * `mapfile`, `getopts`, `wait -p`, a `declare -n` reference) has its subscript evaluated: `test -v "$B"` with `B`
 * holding `a[$(rm x)]` runs it.
 *
 * So the line's assignments are recorded with what is known of their values: a literal value is known (a
 * substitution kept as quoted text in it is read by `unwrap.ts`), as is a number from `$(( … ))` or `${#…}`; a value
 * from a substitution, another variable, `read`, `mapfile`, `printf -v`, or a `for` over words only known when it
 * runs is not. `v+=…` extends each value `v` had (`A='a[$'; A+='(rm x)]'` holds `a[$(rm x)]`: `unwrap.ts` reads the
 * joined value as it reads a literal). A variable holding an unknown value, or a literal naming one (`w=v`:
 * arithmetic evaluates `v` in turn), used in one of those places, makes the line unreadable: the rules fail closed;
 * so does a prompt whose escapes decode into an expansion (`\044(…)`, `$\050…`). Variables set outside the line are
 * not covered (docs/rules.md).
 *
 * @module
 */
import { arithmeticEnd, matchedClose } from "./shell_spans.ts";
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
  /** Words bash takes as a variable's name, holding an expansion (`test -v "$B"`, `declare "$B"=1`). */
  names: string[];
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
  return { known: new Map(), unknown: new Set(), loops: new Map(), arithmetic: [], parameters: [], names: [] };
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

/** The most values one variable may have (each `+=` may double them) before it counts as unknown. */
const MAX_VALUES = 64;

/**
 * Records an assignment of `value` (the word after `=`) to `name`; `subscript` is an array element's (arithmetic);
 * `append` for `name+=value`, which extends each value `name` had (keeping them too: the reader does not follow
 * which branch ran). Returns the values an append made, which no single word of the line holds (`A='a[$';
 * A+='(rm x)]'` makes `a[$(rm x)]`): `unwrap.ts` reads their substitutions as it reads a literal's.
 *
 * @example
 * ```ts
 * import { newVariables, recordAssignment } from "./evaluated_variables.ts";
 * const vars = newVariables();
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * recordAssignment(vars, "v", { text: "$(date)", dynamic: true, literal: "" });
 * vars.unknown.has("v"); // true
 * recordAssignment(vars, "A", w("a[$"));
 * recordAssignment(vars, "A", w("(rm x)]"), undefined, true); // ["a[$(rm x)]"]
 * ```
 */
export function recordAssignment(
  vars: Variables,
  name: string,
  value: ShellWord,
  subscript?: string,
  append = false,
): string[] {
  if (subscript !== undefined) vars.arithmetic.push(subscript);
  const text = value.dynamic ? withoutNumbers(value.text) : value.text;
  if (text === null || value.dynamic && /[$`]/.test(text)) {
    vars.unknown.add(name);
    return [];
  }
  const before = vars.known.get(name) ?? [];
  if (!append || vars.unknown.has(name)) {
    vars.known.set(name, [...before, text]);
    return [];
  }
  const joined = (before.length > 0 ? before : [""]).map((v) => v + text);
  const values = [...new Set([...before, ...joined])];
  if (values.length > MAX_VALUES) vars.unknown.add(name);
  else vars.known.set(name, values);
  return joined.filter((v) => v !== text);
}

/** Names a command's words may be (`read -r v` sets v). */
const NAME_WORD = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Records what a command does with variables: `read`, `mapfile`/`readarray`, `printf -v` and `for`/`select` over
 * words only known when it runs set them to unknown values; `let` and `[[ … ]]` evaluate arithmetic; the words it
 * takes as variable names are recorded ({@link nameWords}).
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
  if (/^(declare|typeset|local|export|readonly)$/.test(name) && words.some((w) => /^-[a-zA-Z]*n/.test(w.text))) {
    // `declare -n X=Y`: X names another variable, whose value $X expands to: not a value known here.
    for (const w of words.slice(1)) {
      const m = /^([A-Za-z_][A-Za-z0-9_]*)/.exec(w.text);
      if (m && !w.text.startsWith("-")) vars.unknown.add(m[1]);
    }
  }
  const args = words.slice(1);
  recordNames(vars, nameWords(name, words));
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
  } else if (DECLARES.test(name) && args.some((w) => /^-[a-zA-Z]*i/.test(w.text))) {
    vars.arithmetic.push(...args.map((w) => w.text)); // declare -i v=…: the value is arithmetic
  }
}

/** Builtins whose operands are names, or assignments to them. */
const DECLARES = /^(declare|typeset|local|export|readonly)$/;

/** Options of `read` and `mapfile` that take a value (`read -a NAME`: a name, taken apart). */
const READ_VALUES = /^[dinNptu]$/, MAPFILE_VALUES = /^[dnOsuCc]$/;

/**
 * The words a command takes as variable names, whose array subscript bash evaluates: `test -v NAME`, `[ -R NAME ]`,
 * `[[ -v NAME ]]`; the operands of `declare`, `typeset`, `local`, `export` and `readonly` (the part before `=`; all
 * of it under `-n`, whose value names a variable too), `unset`, `read` (and its `-a`), `mapfile`/`readarray`;
 * `printf -v NAME`, `wait -p NAME`, `getopts OPTSTRING NAME`.
 *
 * @example
 * ```ts
 * import { nameWords } from "./evaluated_variables.ts";
 * const w = (text: string) => ({ text, dynamic: text.includes("$"), literal: text.replace(/\$.*$/, "") });
 * nameWords("declare", ["declare", "$B=1", "X=$Y"].map(w)); // ["$B", "X"]
 * ```
 */
export function nameWords(name: string, words: readonly ShellWord[]): string[] {
  const args = words.slice(1);
  const after = (flag: RegExp) => args.flatMap((w, k) => flag.test(w.text) && args[k + 1] ? [args[k + 1].text] : []);
  if (name === "test" || name === "[" || name === "[[") return after(/^-[vR]$/);
  if (name === "printf") return after(/^-v$/);
  if (name === "wait") return after(/^-[a-zA-Z]*p$/);
  if (name === "getopts") return args[1] ? [args[1].text] : [];
  const operands = args.filter((w) => w.dynamic || !/^[-+]/.test(w.text));
  if (name === "unset") return operands.map((w) => w.text);
  if (DECLARES.test(name)) {
    const reference = args.some((w) => !w.dynamic && /^-[a-zA-Z]*n/.test(w.text));
    return operands.map((w) => reference ? w.text : w.text.replace(/=[\s\S]*$/, ""));
  }
  if (name === "read" || name === "mapfile" || name === "readarray") return readNames(name, args);
  return [];
}

/** The names `read` or `mapfile` assigns: operands (after options and their values) and `read -a NAME`. */
function readNames(name: string, args: readonly ShellWord[]): string[] {
  const values = name === "read" ? READ_VALUES : MAPFILE_VALUES;
  const out: string[] = [];
  let k = 0;
  for (; k < args.length && /^-./.test(args[k].text) && !args[k].dynamic; k++) {
    if (args[k].text === "--") {
      k++;
      break;
    }
    const flags = args[k].text.slice(1);
    for (let j = 0; j < flags.length; j++) {
      const taken = values.test(flags[j]) || name === "read" && flags[j] === "a";
      if (!taken) continue;
      const value = j + 1 < flags.length ? flags.slice(j + 1) : args[++k]?.text;
      if (flags[j] === "a" && value !== undefined) out.push(value);
      break;
    }
  }
  return [...out, ...args.slice(k).map((w) => w.text)];
}

/** Records the words taken as names: a literal's subscript is arithmetic, a word holding an expansion is kept. */
function recordNames(vars: Variables, names: readonly string[]): void {
  for (const text of names) {
    if (/[$`]/.test(text)) vars.names.push(text);
    else {
      const subscript = /^[A-Za-z_][A-Za-z0-9_]*\[([\s\S]*)\]$/.exec(text);
      if (subscript !== null) vars.arithmetic.push(subscript[1]);
    }
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
function parameterUses(inner: string): { code: string | null; prompt: boolean; arithmetic: string[] } {
  const m = /^(!)?([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(.*)$/s.exec(inner);
  if (m === null) return { code: null, prompt: false, arithmetic: [] };
  const [, bang, name, subscript, rest] = m;
  const arithmetic = subscript ? [subscript.slice(1, -1)] : [];
  if (/^:[^-=?+]/.test(rest)) arithmetic.push(rest.slice(1)); // ${s:off:len}
  const prompt = /^@P/.test(rest);
  return { code: bang || prompt ? name : null, prompt, arithmetic };
}

/**
 * A prompt's text as bash decodes it before expanding it, each character marked when an escape made it: `\nnn`
 * (three octal digits), `\\`, `\$`, `\D{format}` (its format's characters may come out as they are); the other escapes
 * (`\u`, `\w`, `\t`…) make text bash quotes or that holds no `$`, `` ` ``, `(`, `{` or `[`: a space here.
 *
 * @example
 * ```ts
 * import { decodePrompt } from "./evaluated_variables.ts";
 * decodePrompt("\\044(x)").text; // "$(x)"
 * ```
 */
export function decodePrompt(value: string): { text: string; escaped: boolean[] } {
  let text = "";
  const escaped: boolean[] = [];
  const put = (t: string, e: boolean) => {
    text += t;
    for (let k = 0; k < t.length; k++) escaped.push(e);
  };
  for (let i = 0; i < value.length; i++) {
    if (value[i] !== "\\" || i + 1 >= value.length) {
      put(value[i], false);
      continue;
    }
    const octal = /^[0-7]{3}/.exec(value.slice(i + 1, i + 4));
    const format = value[i + 1] === "D" && value[i + 2] === "{" ? value.indexOf("}", i + 3) : -1;
    if (octal !== null) {
      put(String.fromCharCode(parseInt(octal[0], 8) & 0xff), true);
      i += 3;
    } else if (format !== -1) {
      put(value.slice(i + 3, format), true);
      i = format;
    } else {
      put(/[\\$]/.test(value[i + 1]) ? value[i + 1] : " ", true);
      i++;
    }
  }
  return { text, escaped };
}

/** An expansion's start in a decoded prompt that an escape made (`\044(`, `$\050`), or null. */
function escapedExpansion(value: string): string | null {
  const { text, escaped } = decodePrompt(value);
  for (const m of text.matchAll(/\$[({[]|`/g)) {
    if (escaped[m.index] || escaped[m.index + m[0].length - 1]) return m[0];
  }
  return null;
}

/** The `${…}` insides and arithmetic texts (`$((…))`, `$[…]`) of a text bash expands (a prompt's value). */
function expansionsIn(text: string): { parameters: string[]; arithmetic: string[] } {
  const out = { parameters: [] as string[], arithmetic: [] as string[] };
  for (let i = text.indexOf("$"); i !== -1; i = text.indexOf("$", i + 1)) {
    const open = text.startsWith("$((", i) ? "((" : text[i + 1];
    const close = open === "{" ? "}" : open === "[" ? "]" : open === "((" ? ")" : null;
    if (close === null) continue;
    const end = matchedClose(text, i + 1 + (open === "((" ? 1 : 0), open[0], close).end ?? -1;
    if (end === -1) continue;
    const inner = text.slice(i + 1 + open.length, end);
    (open === "{" ? out.parameters : out.arithmetic).push(inner);
  }
  return out;
}

/**
 * What bash evaluates of the prompts it expands (`PS0`…`PS4`, `${v@P}`): the arithmetic and `${…}` of the values the
 * line gave them (a `${w@P}` there is a prompt too), or why it cannot be read (an escape decoding into an expansion).
 */
function promptUses(vars: Variables): { problem: string | null; arithmetic: string[]; parameters: string[] } {
  const out = { problem: null as string | null, arithmetic: [] as string[], parameters: [] as string[] };
  const prompts = [
    ...PROMPTS,
    ...vars.parameters.flatMap((p) => parameterUses(p).prompt ? [parameterUses(p).code!] : []),
  ];
  const seen = new Set<string>();
  for (let k = 0; k < prompts.length && out.problem === null; k++) {
    if (seen.has(prompts[k])) continue;
    seen.add(prompts[k]);
    for (const value of vars.known.get(prompts[k]) ?? []) {
      const made = escapedExpansion(value);
      if (made !== null) {
        out.problem = `bash decodes ${prompts[k]}'s prompt escapes into ${made}…, which it then expands`;
        break;
      }
      const found = expansionsIn(decodePrompt(value).text);
      out.arithmetic.push(...found.arithmetic);
      for (const inner of found.parameters) {
        out.parameters.push(inner);
        const uses = parameterUses(inner);
        if (uses.prompt) prompts.push(uses.code!);
      }
    }
  }
  return out;
}

/** Why a word bash takes as a variable name cannot be read (its subscript is evaluated), or null. */
function nameProblem(vars: Variables, bad: Set<string>): string | null {
  for (const text of vars.names) {
    if (SUBSTITUTION.test(text)) {
      return `bash takes a command's output (in ${text}) as a variable name, and evaluates a subscript in it`;
    }
    const name = namesIn(text).find((n) => bad.has(n));
    if (name !== undefined) {
      return `bash takes ${text} as a variable name, and evaluates a subscript in it: ${name} is only known when it runs`;
    }
  }
  return null;
}

/**
 * Why the line cannot be read, when bash evaluates a variable the line gave a value it cannot know, or a prompt
 * whose escapes decode into an expansion; else null.
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
  const prompts = promptUses(vars);
  if (prompts.problem !== null) return prompts.problem;
  const parameters = [...vars.parameters, ...prompts.parameters];
  const arithmetic = [...vars.arithmetic, ...prompts.arithmetic];
  for (const inner of parameters) arithmetic.push(...parameterUses(inner).arithmetic);
  // A command's output put into arithmetic is evaluated as it is, like a variable's value: `$(( $(cat f) + 1 ))`
  // runs what a subscript in `f` holds (`a[$(rm x)]`), as `n=$(cat f); echo $((n))` does.
  const output = arithmetic.find((text) => SUBSTITUTION.test(text));
  if (output !== undefined) {
    return `bash evaluates a command's output (in ${output.trim()}) as arithmetic, which runs what a subscript in it holds`;
  }
  const bad = tainted(vars);
  const named = nameProblem(vars, bad);
  if (named !== null || bad.size === 0) return named;
  const prompt = PROMPTS.find((p) => bad.has(p));
  if (prompt !== undefined) {
    return `bash expands ${prompt} as a prompt, and this line sets it to a value only known when it runs`;
  }
  for (const inner of parameters) {
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
