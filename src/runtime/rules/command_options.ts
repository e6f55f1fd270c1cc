/**
 * Commands a program runs because an option or its script names them: `tar --to-command=CMD`, `tar -I CMD`,
 * `tar --checkpoint-action=exec=CMD`, `rsync -e CMD` (also in a cluster: `rsync -ave CMD`), `sort
 * --compress-program`, `split --filter`, `man -P`, `zip -TT`, `rg --pre`, `fd -x CMD…`/`-X`; the commands an `awk`
 * program runs (`system("…")`, `print | "…"`, `"…" | getline`) and a GNU `sed` script's `e` command. `unwrap.ts`
 * reads each as a command line of its own; one only known when it runs (`system(cmd)`, `sed 's/…/…/e'`, which runs
 * the pattern space) is a problem, so the rules fail closed on it.
 *
 * Interpreters and editors running their own languages (`python -c`, `node -e`, `vim -c '!…'`) are read by
 * `interpreters.ts`.
 *
 * @module
 */
import { isStdinPath, literalWord, type ShellWord, UNKNOWN_ARGUMENTS, wordFrom } from "./shell.ts";
import { ownEntry } from "../../json.ts";
import { expandLong, longNames } from "./long_options.ts";

/** A shell command a program runs: `args` when it gives the command arguments of its own after it. */
export interface RunScript {
  /** The command's text, as a shell reads it. */
  script: ShellWord;
  /** Whether the program adds arguments after it (`rsync -e ssh` gets a host and a command). */
  args: boolean;
}

/** What one command runs besides itself. */
export interface Runs {
  /** Shell commands it runs. */
  scripts: RunScript[];
  /** Commands it runs as words (`fd -x git push` runs `git push …`). */
  commands: ShellWord[][];
  /** Why some of what it runs is only known when it runs. */
  problems: string[];
}

/** What the line knows of its expansions (see `known_values.ts`). */
export interface Expansions {
  /** Whether a word only expands a variable the line assigned literal values to (read with them elsewhere). */
  known(w: ShellWord): boolean;
  /** Whether a program file only known when the line runs may be the program's own input (`/dev/stdin`). */
  mayBeInput(w: ShellWord, heredoc: boolean): boolean;
}

/** Nothing known of the line's expansions. */
const NO_EXPANSIONS: Expansions = { known: () => false, mayBeInput: (w, heredoc) => w.dynamic && heredoc };

/** Options whose value is a command: option → whether the program adds arguments after it. */
export type CommandOptions = Record<string, boolean>;

const PROGRAM_OPTIONS: Record<string, CommandOptions> = {
  tar: {
    "--to-command": false,
    "-I": true,
    "--use-compress-program": true,
    "-F": false,
    "--info-script": false,
    "--new-volume-script": false,
    "--rsh-command": true,
    "--checkpoint-action": false, // exec=CMD
  },
  rsync: { "-e": true, "--rsh": true, "--rsync-path": true },
  sort: { "--compress-program": true },
  split: { "--filter": false },
  man: { "-P": false, "--pager": false },
  zip: { "-TT": true, "--unzip-command": true },
  rg: { "--pre": true },
};
/** Options that take the words up to `;` (or the end) as a command with unknown arguments. */
const EXEC_WORDS: Record<string, RegExp> = {
  fd: /^(-x|--exec|-X|--exec-batch)$/,
  fdfind: /^(-x|--exec|-X|--exec-batch)$/,
};

/**
 * The value of a command option at `words[k]`: attached (`--opt=V`, `-oV`), the next word (`--opt V`, `-o V`), or
 * in a cluster of short options (`-ave V`, `-avV`); null when `words[k]` is none of `options`.
 *
 * @example
 * ```ts
 * import { optionValue } from "./command_options.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * optionValue(["-ave", "ssh"].map(w), 0, { "-e": true })?.value.text; // "ssh"
 * ```
 */
export function optionValue(
  words: readonly ShellWord[],
  k: number,
  options: CommandOptions,
): { value: ShellWord; args: boolean; next: number } | null {
  const o = words[k].text;
  const next = (option: string) => words[k + 1] ? { value: words[k + 1], args: options[option], next: k + 1 } : null;
  if (Object.hasOwn(options, o)) return next(o);
  const eq = o.indexOf("=");
  // `--opt=V`, `--opt V`, and the same with the option abbreviated (`--to-comm=V`: see long_options.ts).
  const long = expandLong(o, Object.keys(options));
  if (long !== null) return eq > 0 ? { value: wordFrom(words[k], eq + 1), args: options[long], next: k } : next(long);
  if (!/^-[^-]/.test(o) || words[k].dynamic) return null;
  for (let j = 1; j < o.length && /[A-Za-z0-9]/.test(o[j]); j++) {
    const short = `-${o[j]}`;
    if (!Object.hasOwn(options, short)) continue;
    return j === o.length - 1 ? next(short) : { value: wordFrom(words[k], j + 1), args: options[short], next: k };
  }
  return null;
}

/**
 * What a program's command options, or its `awk` program or `sed` script, run; null when `name` runs nothing so.
 *
 * @example
 * ```ts
 * import { optionRuns } from "./command_options.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * optionRuns("tar", ["tar", "--to-command=git push", "-xf", "a.tar"].map(w))?.scripts[0].script.text; // "git push"
 * ```
 */
export function optionRuns(
  name: string,
  words: readonly ShellWord[],
  input?: ShellWord,
  expansions: Expansions = NO_EXPANSIONS,
): Runs | null {
  const known = expansions.known;
  if (name === "awk" || name === "gawk" || name === "mawk" || name === "nawk" || name === "busybox-awk") {
    return awkRuns(words, input, expansions);
  }
  if (name === "sed" || name === "gsed") return sedRuns(words, input, expansions);
  if (name === "tar" || name === "gtar" || name === "bsdtar") words = tarOldStyle(words);
  if (/^(groff|troff|nroff|grog)$/.test(name) && words.some((w) => /^-[a-zA-Z]*U/.test(w.text))) {
    // -U: unsafe mode, in which a document's `.sy` and `.pso` requests run shell commands (the input is not read).
    return { scripts: [], commands: [], problems: [`${name} -U runs the shell commands its input asks for`] };
  }
  const options = ownEntry(PROGRAM_OPTIONS, name) ?? null;
  const exec = ownEntry(EXEC_WORDS, name) ?? null;
  if (options === null && exec === null) return null;
  const mentions = mentionsOf(name, options, exec);
  const names = optionNames(options, exec);
  const hidden = hiddenOption(words, names, known);
  let k = 1;
  while (k < words.length && !mentions.test(words[k].text) && expandLong(words[k].text, names) === null) k++;
  if (k === words.length && hidden === null) return null; // no word is one of its command options: the common case
  const runs: Runs = { scripts: [], commands: [], problems: [] };
  if (hidden !== null) {
    runs.problems.push(
      `${name}'s word ${hidden.text} may be one of its options that run a command, unknown until it runs`,
    );
  }
  for (k = 1; k < words.length && words[k].text !== "--"; k++) {
    const long = exec === null ? null : expandLong(words[k].text, longNames(exec));
    if (exec?.test(words[k].text) || (long !== null && !words[k].text.includes("="))) {
      let end = k + 1;
      while (end < words.length && words[end].text !== ";") end++;
      const command = words.slice(k + 1, end).map((w) => w.text.includes("{") ? unknownFrom(w, "{") : w);
      if (command.length > 0) runs.commands.push([...command, UNKNOWN_ARGUMENTS]);
      k = end;
      continue;
    }
    const found = options === null ? null : optionValue(words, k, options);
    if (found === null) continue;
    let value = found.value;
    if (expandLong(words[k].text, ["--checkpoint-action"]) !== null) {
      if (!/^exec=/.test(value.literal) && !(value.dynamic && value.literal === "")) continue;
      value = wordFrom(value, Math.min(5, value.literal.length));
    }
    runs.scripts.push({ script: value, args: found.args });
    k = found.next;
  }
  return runs;
}

/**
 * The first word before `--` that may turn out to be one of a program's command options once the line runs: the
 * arguments `xargs` adds, or an expansion after a `-` that could spell one or give one its value (`tar -$F`, `tar
 * -I"$P"`, `fd --ex$X`); null when none. A word only known when it runs but not starting as an option (`tar -xf "$A"`)
 * is taken for an operand; a variable the line assigned is read with its values instead (`known`, see
 * `known_values.ts`); `--opt="$V"` is read as the option with a value unknown until it runs.
 */
function hiddenOption(
  words: readonly ShellWord[],
  names: readonly string[],
  known: (w: ShellWord) => boolean,
): ShellWord | null {
  for (let k = 1; k < words.length; k++) {
    const w = words[k];
    if (!w.dynamic) {
      if (w.text === "--") return null;
      continue;
    }
    if (w === UNKNOWN_ARGUMENTS) return w;
    const l = w.literal;
    if (!l.startsWith("-") || known(w)) continue;
    if (l === "-" || l === "--") return w;
    if (l.startsWith("--")) {
      if (names.some((o) => o.startsWith("--") && (o.startsWith(l) || (l.startsWith(o) && l[o.length] !== "=")))) {
        return w;
      }
    } else if (/^-[A-Za-z0-9]*$/.test(l) && names.some((o) => /^-[^-]/.test(o))) return w;
  }
  return null;
}

/** tar's short options that take a value. */
const TAR_VALUES = "bCfFgHIKLNTVX";

/**
 * tar's old-style options, a first word without a dash (`tar cfI a.tar CMD y`: each letter that takes a value takes
 * the next word, in order), as the usual words (`tar -c -f a.tar -I CMD y`); other words as they are.
 *
 * @example
 * ```ts
 * import { tarOldStyle } from "./command_options.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * tarOldStyle(["tar", "cfI", "a.tar", "gzip", "y"].map(w)).map((x) => x.text).join(" "); // "tar -c -f a.tar -I gzip y"
 * ```
 */
export function tarOldStyle(words: readonly ShellWord[]): readonly ShellWord[] {
  const first = words[1];
  if (first === undefined || first.dynamic || !/^[A-Za-z]+$/.test(first.text)) return words;
  const out: ShellWord[] = [words[0]];
  let next = 2;
  for (const letter of first.text) {
    out.push(literalWord(`-${letter}`));
    if (TAR_VALUES.includes(letter) && next < words.length) out.push(words[next++]);
  }
  return [...out, ...words.slice(next)];
}

/** Per program: a test of whether a word may be (or hold) one of its command options. */
const MENTIONS = new Map<string, RegExp>();

/** The command options of a program: those of its table, and those that take the words after them. */
function optionNames(options: CommandOptions | null, exec: RegExp | null): string[] {
  return [...Object.keys(options ?? {}), ...(exec?.source.match(/-[-\w]+/g) ?? [])];
}

/** The words that may be a command option of `name`: a long one, or a cluster holding a short one's letter. */
function mentionsOf(name: string, options: CommandOptions | null, exec: RegExp | null): RegExp {
  let re = MENTIONS.get(name);
  if (re === undefined) {
    const names = optionNames(options, exec);
    const long = names.filter((o) => o.startsWith("--")).map((o) => o.slice(2));
    const short = names.filter((o) => /^-[^-]$/.test(o)).map((o) => o[1]);
    const other = names.filter((o) => /^-[^-]./.test(o)); // -TT
    const parts = [
      long.length > 0 ? `--(${long.join("|")})` : null,
      short.length > 0 ? `-[A-Za-z0-9]*[${short.join("")}]` : null,
      ...other,
    ].filter((p) => p !== null);
    MENTIONS.set(name, re = new RegExp(`^(${parts.join("|")})`));
  }
  return re;
}

/** A word known only up to `mark` (a placeholder the program fills in). */
function unknownFrom(w: ShellWord, mark: string): ShellWord {
  return { text: w.text, dynamic: true, literal: w.literal.split(mark)[0] };
}

/** Programs only known when they run: read from a process substitution, another descriptor, or an unknown input. */
const UNKNOWN_PROGRAMS = new WeakSet<ShellWord>();

/**
 * The program an `awk -f FILE` or `sed -f FILE` reads, when it is read here: its input (`-f /dev/stdin`, `-f -`),
 * which is the here-document or here-string given to it, or unknown without one; unknown from a process
 * substitution or another descriptor (`-f <(…)`, `/dev/fd/3`). Null for a file (not read, see docs/rules.md).
 */
function programFile(file: ShellWord | undefined, input: ShellWord | undefined, ex: Expansions): ShellWord | null {
  if (file === undefined) return null;
  const unknown = (from: string) => {
    const w = { text: from, dynamic: true, literal: "" };
    UNKNOWN_PROGRAMS.add(w);
    return w;
  };
  if (!file.dynamic && isStdinPath(file.text)) {
    return input ?? unknown("its input");
  }
  if (/^[<>]\(/.test(file.text) || /^\/(dev|proc\/[^/]+)\/fd\/\d/.test(file.text)) return unknown(file.text);
  if (ex.mayBeInput(file, input !== undefined)) return unknown(file.text); // `-f "$(printf /dev/stdin)" <<< …`
  return null;
}

/** `awk`'s options that take a value (the program is then the first other word, unless `-f`/`-e` gave one). */
const AWK_VALUE = /^(-F|-v|-f|-e|-i|-l|--file|--source|--include|--load|--assign|--field-separator)$/;

/** The program texts of an `awk` command (its `-e`/`--source` values, or its first operand unless `-f` gave one). */
function awkPrograms(words: readonly ShellWord[], input?: ShellWord, ex: Expansions = NO_EXPANSIONS): ShellWord[] {
  const programs: ShellWord[] = [];
  let file = false;
  const fromFile = (f: ShellWord | undefined) => {
    const program = programFile(f, input, ex);
    if (program !== null) programs.push(program);
    return f !== undefined;
  };
  for (let k = 1; k < words.length; k++) {
    const t = words[k].text;
    if (t === "--") return file || programs.length > 0 ? programs : words.slice(k + 1, k + 2);
    if (/^(-e|--source)$/.test(t)) programs.push(words[++k] ?? UNKNOWN_ARGUMENTS);
    else if (/^--source=/.test(t)) programs.push(wordFrom(words[k], 9));
    else if (/^(-f|--file)$/.test(t)) file = fromFile(words[++k]);
    else if (/^(-f.|--file=)/.test(t)) file = fromFile(wordFrom(words[k], t.startsWith("--") ? 7 : 2));
    else if (AWK_VALUE.test(t)) k++;
    else if (!t.startsWith("-") || t === "-") return file || programs.length > 0 ? programs : [words[k]];
  }
  return programs;
}

/** A double-quoted awk string: its text with the escapes awk reads (`\"`, `\\`, `\n`, `\t`). */
const AWK_STRING = String.raw`"((?:[^"\\\n]|\\.)*)"`;
const AWK_RUNS = new RegExp(
  String.raw`\bsystem\s*\(\s*${AWK_STRING}\s*\)|\|&?\s*${AWK_STRING}|${AWK_STRING}\s*\|&?\s*getline`,
  "g",
);

function awkText(s: string): string {
  return s.replace(/\\(.)/g, (_, c: string) => c === "n" ? "\n" : c === "t" ? "\t" : c);
}

const AWK_REDIRECT = new RegExp(String.raw`(>>?|<)\s*${AWK_STRING}`, "g");

/**
 * The files an awk program names in its own redirections: `print > "f"` and `>> "f"` written, `getline < "f"` read
 * (a name built when it runs is not known here).
 *
 * @example
 * ```ts
 * import { awkFiles } from "./command_options.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * awkFiles(["awk", '{print > "out"}', "in"].map(w)).writes; // ["out"]
 * ```
 */
export function awkFiles(words: readonly ShellWord[]): ScriptFiles {
  const files: ScriptFiles = { reads: [], writes: [] };
  for (const program of awkPrograms(words)) {
    for (const m of (program.dynamic ? program.literal : program.text).matchAll(AWK_REDIRECT)) {
      (m[1] === "<" ? files.reads : files.writes).push(awkText(m[2]));
    }
  }
  return files;
}

/**
 * Why a program text is only known when the line runs (read from elsewhere, or built from an expansion that is not
 * a variable the line assigned: `awk "$P"`, `sed "s/a/$B/"`), or null.
 */
function unknownProgram(program: ShellWord, what: string, known: (w: ShellWord) => boolean): string | null {
  if (UNKNOWN_PROGRAMS.has(program)) return `${what} from ${program.text}, unknown here`;
  if (!program.dynamic || known(program)) return null;
  return program === UNKNOWN_ARGUMENTS
    ? `${what} from the arguments it is given, unknown until it runs`
    : `${what} built when the line runs (${program.text.slice(0, 80)}), unknown here`;
}

/** What an awk program runs: literal commands are read; one built when it runs is a problem. */
function awkRuns(words: readonly ShellWord[], input: ShellWord | undefined, ex: Expansions): Runs {
  const runs: Runs = { scripts: [], commands: [], problems: [] };
  for (const program of awkPrograms(words, input, ex)) {
    const unknown = unknownProgram(program, "awk reads its program", ex.known);
    if (unknown !== null) runs.problems.push(unknown);
    const text = program.dynamic ? program.literal : program.text;
    const rest = text.replace(AWK_RUNS, (_, a?: string, b?: string, c?: string) => {
      runs.scripts.push({ script: literalWord(awkText(a ?? b ?? c ?? "")), args: false });
      return " ";
    });
    // What remains: a command from an expression (`system(cmd)`, `print | cmd`, `cmd | getline`).
    const strings = rest.replace(new RegExp(AWK_STRING, "g"), '""');
    if (/\bsystem\s*\(/.test(strings) || /\|&?\s*getline|\bprintf?\b[^;}\n]*\|/.test(strings)) {
      runs.problems.push(`awk runs a command built when it runs: ${text.slice(0, 80)}`);
    }
  }
  return runs;
}

/** `sed`'s scripts: `-e`/`--expression` values, or its first operand unless `-f` gave a file; null with `--sandbox`. */
function sedScripts(
  words: readonly ShellWord[],
  input?: ShellWord,
  ex: Expansions = NO_EXPANSIONS,
): ShellWord[] | null {
  const scripts: ShellWord[] = [];
  let file = false;
  const fromFile = (f: ShellWord | undefined) => {
    const script = programFile(f, input, ex);
    if (script !== null) scripts.push(script);
    return true;
  };
  for (let k = 1; k < words.length; k++) {
    const t = words[k].text;
    if (t === "--sandbox") return null; // e, r, w refused
    if (t === "--") return file || scripts.length > 0 ? scripts : words.slice(k + 1, k + 2);
    if (/^(-e|--expression)$/.test(t)) scripts.push(words[++k] ?? UNKNOWN_ARGUMENTS);
    else if (/^--expression=/.test(t)) scripts.push(wordFrom(words[k], 13));
    else if (/^-[a-zA-Z]*e./.test(t)) scripts.push(wordFrom(words[k], t.indexOf("e") + 1));
    else if (/^-[a-zA-Z]*e$/.test(t)) scripts.push(words[++k] ?? UNKNOWN_ARGUMENTS);
    else if (/^(-[a-zA-Z]*f|--file)$/.test(t)) file = fromFile(words[++k]);
    else if (/^(-[a-zA-Z]*f|--file=)/.test(t)) {
      file = fromFile(wordFrom(words[k], t.startsWith("--") ? 7 : t.indexOf("f") + 1));
    } else if (/^(-l|--line-length|-f|--file)$/.test(t)) k++;
    else if (!t.startsWith("-")) return file || scripts.length > 0 ? scripts : [words[k]];
  }
  return scripts;
}

/** The files a program's own script opens: read, and written. */
export interface ScriptFiles {
  reads: string[];
  writes: string[];
}

/**
 * The files `sed`'s scripts open themselves: `r`/`R` read, `w`/`W` and the `s///w` flag write (see {@link sedCommands}).
 *
 * @example
 * ```ts
 * import { sedFiles } from "./command_options.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * sedFiles(["sed", "r .env", "README"].map(w)).reads; // [".env"]
 * ```
 */
export function sedFiles(words: readonly ShellWord[]): ScriptFiles {
  const files: ScriptFiles = { reads: [], writes: [] };
  for (const script of sedScripts(words) ?? []) {
    const { reads, writes } = sedCommands(script.dynamic ? script.literal : script.text);
    files.reads.push(...reads);
    files.writes.push(...writes);
  }
  return files;
}

/** What GNU sed's `e` command and `s///e` flag run, over each script. */
function sedRuns(words: readonly ShellWord[], input: ShellWord | undefined, ex: Expansions): Runs {
  const runs: Runs = { scripts: [], commands: [], problems: [] };
  for (const script of sedScripts(words, input, ex) ?? []) {
    const unknown = unknownProgram(script, "sed reads its script", ex.known);
    if (unknown !== null) runs.problems.push(unknown);
    const text = script.dynamic ? script.literal : script.text;
    for (const e of sedCommands(text).execs) {
      if (e === null) runs.problems.push(`sed runs its pattern space as a command (e): ${text.slice(0, 80)}`);
      else runs.scripts.push({ script: literalWord(e), args: false });
    }
  }
  return runs;
}

/**
 * What a sed script runs and opens: the commands of its `e` commands (null: the pattern space, known only when it
 * runs), and the files its `r`/`R` commands read and its `w`/`W` commands and `s///w` flag write.
 */
function sedCommands(text: string): { execs: (string | null)[] } & ScriptFiles {
  const out: (string | null)[] = [], reads: string[] = [], writes: string[] = [];
  let i = 0;
  const restOfLine = () => {
    const m = /[^\n]*/y;
    m.lastIndex = i;
    const rest = m.exec(text)![0];
    i += rest.length;
    return rest.trim();
  };
  const skip = (re: RegExp) => {
    re.lastIndex = i;
    const m = re.exec(text);
    if (m && m.index === i) i += m[0].length;
  };
  const delimited = () => { // past one `dREd` part, `i` at its delimiter
    const d = text[i++];
    while (i < text.length && text[i] !== d) i += text[i] === "\\" ? 2 : 1;
    i++;
  };
  while (i < text.length) {
    skip(/[\s;{}!]*/y);
    if (i >= text.length) break;
    // An address or two: a line, `$`, `first~step`, `/re/`, `\cREc`, `addr,+N`.
    for (let a = 0; a < 2; a++) {
      if (text[i] === "/" || text[i] === "\\") {
        if (text[i] === "\\") i++;
        delimited();
        skip(/[IM]*/y);
      } else skip(/(\d+(~\d+)?|\$|[+~]\d+)/y);
      if (text[i] !== ",") break;
      i++;
    }
    skip(/[\s!]*/y);
    const c = text[i++];
    if (c === undefined) break;
    if (c === "s") {
      delimited();
      i--;
      delimited();
      const flags = /[a-zA-Z0-9]*/y;
      flags.lastIndex = i;
      const f = (flags.exec(text)?.[0] ?? "").split("w")[0]; // `w FILE` takes the rest of the line
      i += f.length;
      if (f.includes("e")) out.push(null);
      if (text[i] === "w") {
        i++;
        writes.push(restOfLine());
      }
    } else if (c === "y") {
      delimited();
      i--;
      delimited();
    } else if (c === "e") {
      const m = /[^\n;]*/y;
      m.lastIndex = i;
      const command = m.exec(text)![0];
      i += command.length;
      out.push(command.trim() === "" ? null : command.trim());
    } else if ("rR".includes(c)) reads.push(restOfLine()); // a file name: to the line's end
    else if ("wW".includes(c)) writes.push(restOfLine());
    else if ("aic:".includes(c)) skip(/[^\n]*/y); // text or a label: to the line's end
    else if ("btTv".includes(c)) skip(/[^\n;]*/y); // a label
    else if ("qQlL".includes(c)) skip(/\s*\d*/y);
  }
  return { execs: out, reads, writes };
}
