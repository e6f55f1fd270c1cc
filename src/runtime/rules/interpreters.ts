/**
 * The code interpreters run from the command line: `python -c CODE`, `node -e CODE`, `perl -e CODE`, `ruby -e`,
 * `php -r`, `bun -e`, `deno eval`, `osascript -e`, `lua -e`, `Rscript -e`, `julia -e`, `emacs --eval`…, or their
 * input when no program file is named (`python3 - <<'EOF'`, `node <<< '…'`); and an editor's commands (`vim -c
 * '!git push'`, `vim +'!…'`), whose `!` runs a shell command.
 *
 * An interpreter's language is not read: the commands its code spells out in string literals are (`os.system("git
 * push")`, `execSync('git push')`, `system("git", "push")`, `["git", "push"]`, `"git " + "push"`, backquotes, Perl's
 * `qx{…}`), as command lines of their own, for deny and ask rules only (an editor's string that is one of its
 * commands, `"!git push"`, by the shell command it runs). Code that builds a command otherwise
 * (`chr(103)+…`) is not read: deny the interpreter where that matters (docs/rules.md).
 *
 * @module
 */
import { exCommands, type ExReading } from "./ex_commands.ts";
import { gdbCommands, gdbInputCommands, gdbReadsInput } from "./launchers.ts";
import { VIM_NAMES, vimArgs } from "./vim_args.ts";
import { isStdinPath, literalWord, type ShellWord, wordFrom } from "./shell.ts";

/** How a comment starts in a language, if it has one a string literal could be confused with. */
export type Comment = "#" | "//" | "--" | ";" | null;

/** How an interpreter takes its code on the command line. */
interface Interpreter {
  /** Options whose value is code (`-c`, `-e`, `--eval`); a short one may end a cluster (`perl -ne CODE`). */
  code: RegExp;
  /** Its other options that take a value (attached, or the next word). */
  values: RegExp;
  /** Short options whose value can only be attached: the rest of the word is theirs (`perl -Mstrict`, `-i.bak`). */
  attached?: RegExp;
  /** Of those, the ones whose value is code too (`perl '-Mstrict;system("…")'` runs `use strict;system("…");`). */
  attachedCode?: RegExp;
  /** Options naming a module to load first, whose `data:` URL is code (`node --import 'data:text/javascript,…'`). */
  modules?: RegExp;
  /** Options after which the program comes from elsewhere (`python -m MODULE`, `php -f FILE`): no code to read. */
  other?: RegExp;
  /** Whether it reads its program from its input when given none (`python3 <<< '…'`); bun and emacs do not. */
  input?: false;
  /** Tcl (expect): its `spawn` and `exec` commands run their words as a command. */
  tcl?: true;
  /** How a comment starts in its language (to the end of the line; `//` also has block comments), for its literals. */
  comment: Comment;
}

const INFO = /^(-v|-V|--version|-h|--help|-\?)$/;
const PYTHON: Interpreter = { code: /^-c$/, values: /^(-W|-X|--check-hash-based-pycs)$/, other: /^-m$/, comment: "#" };
const NODE: Interpreter = {
  code: /^(-e|--eval|-p|--print)$/,
  values:
    /^(-r|--require|--import|--loader|--experimental-loader|-C|--conditions|--env-file|--input-type|--title|--inspect-port|--stack-size)$/,
  other: /^(--test|--run|-c|--check)$/,
  modules: /^(-r|--require|--import|--loader|--experimental-loader)$/,
  comment: "//",
};
const PERL: Interpreter = {
  code: /^-[eE]$/,
  values: /^$/,
  attached: /^-[IMmxil0CFdD]$/,
  attachedCode: /^-[Mm]$/,
  comment: "#",
};
const RUBY: Interpreter = {
  code: /^-e$/,
  values: /^(-I|-r|-C|-E|-F|--encoding)$/,
  attached: /^-[xil0KTW]$/,
  comment: "#",
};
const LUA: Interpreter = { code: /^-e$/, values: /^-l$/, comment: "--" };

/** Interpreters by program name (python3.12 is python). */
const INTERPRETERS: Record<string, Interpreter> = {
  python: PYTHON,
  pypy: PYTHON,
  node: NODE,
  nodejs: NODE,
  bun: {
    code: /^(-e|--eval|-p|--print)$/,
    values: /^(--cwd|-c|--config|--env-file|-r|--preload)$/,
    input: false,
    comment: "//",
  },
  perl: PERL,
  ruby: RUBY,
  php: { code: /^(-r|-B|-R|-E)$/, values: /^(-c|-d|-z|-t)$/, other: /^(-f|-F|-S|-l|-m|-i|-a)$/, comment: "//" },
  lua: LUA,
  luajit: LUA,
  Rscript: { code: /^-e$/, values: /^--default-packages$/, comment: "#" },
  R: { code: /^-e$/, values: /^(-f|--file)$/, comment: "#" },
  julia: { code: /^(-e|--eval|-E|--print)$/, values: /^(-J|--project|-t|--threads|-p|--procs)$/, comment: "#" },
  elixir: { code: /^(-e|--eval)$/, values: /^(-r|-pa|-pz)$/, input: false, comment: "#" },
  groovy: { code: /^-e$/, values: /^(-cp|--classpath)$/, input: false, comment: "//" },
  osascript: { code: /^-e$/, values: /^(-l|-s)$/, comment: "--" },
  emacs: { code: /^(--eval|-eval)$/, values: /^(-l|--load|-f|--funcall|--chdir)$/, input: false, comment: ";" },
  expect: { code: /^-c$/, values: /^-D$/, other: /^-f$/, comment: "#", tcl: true },
  tclsh: { code: /^$/, values: /^-encoding$/, comment: "#", tcl: true },
};

/** The code a command line gives an interpreter, and its editor commands that run a shell. */
export interface InterpreterCode {
  /** Code given as words (`-c CODE`). */
  code: ShellWord[];
  /** Whether it reads its program from its input (no program file, no code option). */
  fromInput: boolean;
  /** Shell commands an editor's `!` runs (`vim -c '!git push'`). */
  shell: ShellWord[];
  /** How a comment starts in its language. */
  comment: Comment;
  /** Tcl's `spawn` and `exec` run commands (expect). */
  tcl?: true;
  /** The program file it runs (`python3 x.py`): read when the line wrote it (`written_scripts.ts`). */
  file?: ShellWord;
  /** An editor in Ex mode (`ex`, `vim -es`) reading its commands from its input: each line is an editor command. */
  editorInput?: true;
  /** An editor's commands (vim's): a string literal in them may be a command (`let c = "!git push"`). */
  editor?: true;
  /** Why parts of the commands cannot be read (`vim -c 'exe g:cmd'`): the rules fail closed. */
  problems?: string[];
  /** gdb's: a string in its Python may be a gdb command (`gdb.execute("shell git push")`). */
  gdb?: true;
  /** How to read the commands of its input when `editorInput` (vim's Ex commands by default). */
  readInput?: (text: string) => ExReading;
  /** Whether an editor's commands defined a mapping, or typed keys: with its input's, a mapping may run. */
  editorFlags?: EditorFlags;
}

/** What an editor's commands did that matters to the commands of its input (`ex_commands.ts`' `maps`, `typed`). */
export interface EditorFlags {
  maps?: boolean;
  typed?: boolean;
}

/** The interpreter a program name stands for: `python3.12` → python, `pypy3` → pypy. */
function interpreterName(name: string): string | null {
  const base = name.replace(/\d+(\.\d+)*$/, ""); // `python.exe`: read as `python` by unwrap.ts' other reading
  return Object.hasOwn(INTERPRETERS, base) ? base : null;
}

/**
 * What code a command gives an interpreter (or an editor's shell commands, or the program file it runs); null when
 * `name` is none, or it runs a module (`python -m http.server`), or only prints its version.
 *
 * @example
 * ```ts
 * import { interpreterCode } from "./interpreters.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * interpreterCode("python3", ["python3", "-c", "import os"].map(w))?.code[0].text; // "import os"
 * ```
 */
export function interpreterCode(name: string, words: readonly ShellWord[]): InterpreterCode | null {
  if (VIM_NAMES.test(name)) return editorCommands(words);
  if (name === "deno") return denoCode(words);
  if (name === "gdb" || name === "cgdb") return gdbCode(words);
  const key = interpreterName(name);
  if (key === null) return null;
  const it = INTERPRETERS[key];
  const out: InterpreterCode = { code: [], fromInput: false, shell: [], comment: it.comment, tcl: it.tcl };
  const preload: ShellWord[] = []; // code loaded before the program (`perl -M…`, `node --import data:…`)
  let k = 1;
  for (; k < words.length; k++) {
    const w = words[k], t = w.text;
    if (w.dynamic && !w.literal.startsWith("-")) break; // a file (`<(…)`: unknown, below)
    if (t === "-") return { ...out, code: preload, fromInput: true };
    if (t === "--" || !t.startsWith("-")) break;
    if (INFO.test(t) || it.other?.test(t)) {
      return out.code.length + preload.length > 0 ? { ...out, code: [...preload, ...out.code] } : null;
    }
    const eq = t.indexOf("=");
    if (t.startsWith("--") && eq > 0) {
      if (it.code.test(t.slice(0, eq))) out.code.push(wordFrom(w, eq + 1));
      if (it.modules?.test(t.slice(0, eq))) preload.push(...dataCode(wordFrom(w, eq + 1)));
    } else if (it.code.test(t) || it.values.test(t)) {
      if (it.code.test(t) && words[k + 1] !== undefined) out.code.push(words[k + 1]);
      if (it.modules?.test(t) && words[k + 1] !== undefined) preload.push(...dataCode(words[k + 1]));
      k++;
    } else if (!t.startsWith("--")) k = cluster(it, words, k, out, preload);
  }
  if (out.code.length > 0) return { ...out, code: [...preload, ...out.code] };
  // No code given: a program file follows, or the program is its input.
  const file = k < words.length ? words[k].text === "--" ? words[k + 1] : words[k] : undefined;
  const program = file === undefined ? undefined : programFile(file);
  const loaded = { ...out, code: preload };
  if (program === "input") return { ...loaded, fromInput: true };
  if (program !== undefined) return { ...loaded, code: [...preload, program] }; // `<(…)`: unknown
  if (file !== undefined) return { ...loaded, file }; // not read (unless the line wrote it, or it may be its input)
  if (it.input === false) return preload.length > 0 ? loaded : null;
  return { ...loaded, fromInput: true };
}

/**
 * The program file an interpreter is given, when it is its input (`python3 /dev/stdin <<'EOF'`: the here-document)
 * or only known when it runs (`python3 <(…)`, `/dev/fd/3`); undefined for a file.
 */
function programFile(file: ShellWord): "input" | ShellWord | undefined {
  if (!file.dynamic && isStdinPath(file.text, false)) return "input";
  if (/^[<>]\(/.test(file.text) || /^\/(dev|proc\/[^/]+)\/fd\/\d/.test(file.text)) {
    return { text: file.text, dynamic: true, literal: "" };
  }
  return undefined;
}

/**
 * The code of a module given as a `data:` URL (`data:text/javascript,…`, `;base64,…`), decoded; a module named
 * otherwise is a file (not read), and a URL only known when it runs is unknown code.
 *
 * @example
 * ```ts
 * import { dataCode } from "./interpreters.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * dataCode(w("data:text/javascript,console.log(%22hi%22)"))[0].text; // 'console.log("hi")'
 * ```
 */
export function dataCode(w: ShellWord): ShellWord[] {
  if (!/^data:/i.test(w.dynamic ? w.literal : w.text)) return [];
  const comma = w.text.indexOf(",");
  if (w.dynamic || comma === -1) return [{ ...w, dynamic: true, literal: "" }];
  const data = w.text.slice(comma + 1);
  try {
    const text = decodeURIComponent(data);
    return [literalWord(/;base64$/i.test(w.text.slice(0, comma)) ? atob(text) : text)];
  } catch {
    return [{ ...w, dynamic: true, literal: "" }];
  }
}

/**
 * The code an environment variable gives an interpreter's options: `PERL5OPT`'s `-M`/`-m` (perl reads it as
 * switches), `NODE_OPTIONS`' `--import`/`--require` `data:` URLs. Null for any other variable; unknown code when the
 * value is only known when it runs.
 *
 * @example
 * ```ts
 * import { optionsVariableCode } from "./interpreters.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * optionsVariableCode("PERL5OPT", w("-Mstrict;system(1)"))?.code[0].text; // "strict;system(1)"
 * ```
 */
export function optionsVariableCode(name: string, value: ShellWord): InterpreterCode | null {
  const program = name === "PERL5OPT" ? "perl" : name === "NODE_OPTIONS" ? "node" : null;
  if (program === null) return null;
  const it = INTERPRETERS[program];
  const out: InterpreterCode = { code: [], fromInput: false, shell: [], comment: it.comment };
  if (value.dynamic) return { ...out, code: [value] };
  const words = value.text.split(/\s+/).filter((t) => t !== "").map(literalWord);
  for (let k = 0; k < words.length; k++) {
    const t = words[k].text, eq = t.indexOf("=");
    if (it.modules?.test(eq > 0 ? t.slice(0, eq) : t)) {
      out.code.push(...dataCode(eq > 0 ? wordFrom(words[k], eq + 1) : words[++k] ?? literalWord("")));
    } else if (/^-[^-]/.test(t)) cluster(it, [literalWord(program), words[k]], 1, out, out.code);
  }
  return out.code.length > 0 ? out : null;
}

/**
 * Reads a cluster of short options (`-ne CODE`, `-Sc CODE`, `-eCODE`, `-Mstrict`, `-pi.bak`): its flags, up to an
 * option taking a value (the rest of the word, or the next word). Returns the index of the last word it took.
 */
function cluster(
  it: Interpreter,
  words: readonly ShellWord[],
  k: number,
  out: InterpreterCode,
  preload: ShellWord[],
): number {
  const t = words[k].text;
  for (let j = 1; j < t.length; j++) {
    const letter = `-${t[j]}`;
    const rest = j + 1 < t.length;
    if (it.code.test(letter)) {
      if (rest) out.code.push(wordFrom(words[k], j + 1));
      else if (words[k + 1] !== undefined) out.code.push(words[++k]);
      return k;
    }
    if (it.values.test(letter)) return rest ? k : k + 1;
    if (it.attachedCode?.test(letter) && rest) preload.push(wordFrom(words[k], j + 1));
    if (it.attached?.test(letter)) return k;
  }
  return k;
}

/** `deno eval [-p] CODE`, `deno repl --eval CODE`; `deno run -` reads its input. */
function denoCode(words: readonly ShellWord[]): InterpreterCode | null {
  const sub = words[1]?.text;
  const out: InterpreterCode = { code: [], fromInput: false, shell: [], comment: "//" };
  if (sub === "eval") {
    const code = words.slice(2).find((w) => !w.text.startsWith("-"));
    return code === undefined ? null : { ...out, code: [code] };
  }
  if (sub === "repl") {
    const k = words.findIndex((w) => /^--eval(=|$)/.test(w.text));
    if (k === -1) return null;
    const code = words[k].text.startsWith("--eval=") ? wordFrom(words[k], 7) : words[k + 1];
    return code === undefined ? null : { ...out, code: [code] };
  }
  if (sub === "run" && words.some((w, k) => k > 1 && w.text === "-")) return { ...out, fromInput: true };
  return null;
}

/**
 * gdb's commands (`-ex`, `-iex`) in Python (`python …`, `py`, `pi`) or Guile (`guile …`, `gu`): code to read, whose
 * strings are read as gdb commands too (`gdb.execute("shell …")`); and its input, when it reads commands from it
 * (`gdbReadsInput`: no `-batch`, or `-x /dev/stdin`), read one gdb command a line.
 */
function gdbCode(words: readonly ShellWord[]): InterpreterCode | null {
  // Its commands only known when it runs fail closed in `launchers.ts`, which reads the same commands' shell.
  const code = gdbCommands(words).commands.flatMap((value) => {
    const lang = value.dynamic ? null : /^\s*(python-interactive|python|pi|py|guile|gu)\b\s*/.exec(value.text);
    return lang === null ? [] : [literalWord(value.text.slice(lang[0].length))];
  });
  const input = gdbReadsInput(words);
  if (code.length === 0 && !input) return null;
  const out: InterpreterCode = { code, fromInput: input, shell: [], comment: "#", gdb: true };
  return input ? { ...out, editorInput: true, readInput: gdbInputCommands } : out;
}

/**
 * The command lines a program's code holds: those its strings spell out ({@link codeStrings}), and in Tcl the words
 * of its `spawn` and `exec` commands (`expect -c 'spawn git push'`). Null when it holds too many strings.
 *
 * @example
 * ```ts
 * import { codeLines } from "./interpreters.ts";
 * codeLines("spawn git push; expect eof", { code: [], fromInput: false, shell: [], comment: "#", tcl: true });
 * // ["git push"]
 * ```
 */
export function codeLines(text: string, code: InterpreterCode): string[] | null {
  const strings = codeStrings(text, code.comment);
  // An editor's string may be a command it runs later (`let c = "!git push"`, `let @a = "sil !…"`): its shell too.
  if (strings !== null && code.editor) return [...strings, ...strings.flatMap((s) => exCommands(s).shell)];
  if (strings !== null && code.gdb) return [...strings, ...strings.flatMap((s) => gdbInputCommands(s).shell)];
  if (strings === null || !code.tcl) return strings;
  const tcl = [...text.matchAll(/(?:^|[;\n[{])\s*(?:spawn|exec)\s+(?:-\S+\s+)*([^;\n\]}]+)/g)].map((m) => m[1]);
  return [...strings, ...tcl];
}

/**
 * The shell commands an editor's command line runs (`!CMD`, `sil! exe "!CMD"`, `windo !CMD`…: see
 * `ex_commands.ts`), and why parts of it cannot be read.
 *
 * @example
 * ```ts
 * import { editorShell } from "./interpreters.ts";
 * editorShell("silent !git push").shell; // ["git push"]
 * ```
 */
export function editorShell(command: string): ExReading {
  return exCommands(command);
}

/**
 * vim's `-c CMD` (`-cCMD`, `-esc CMD`), `--cmd CMD` and `+CMD` (`vim_args.ts`): the shell commands they run
 * (`ex_commands.ts`), and code whose strings are read; in Ex mode (`ex`, `vim -e`, `-es`, `-E`) the commands of its
 * input too, unless its last command ends it (`q!`; `wq`, `x` when it names a file to write), and of its input when a
 * command file is its input (`-S /dev/stdin`, `so /dev/stdin`). A `:normal` or `feedkeys()` after a mapping is
 * defined types keys the mapping turns into commands: it fails closed.
 */
function editorCommands(words: readonly ShellWord[]): InterpreterCode | null {
  const out: InterpreterCode = { code: [], fromInput: false, shell: [], comment: null, editor: true, problems: [] };
  const args = vimArgs(words);
  out.problems!.push(...args.problems);
  let ends = false, sourcesInput = args.commandFiles.some((f) => !f.dynamic && isStdinPath(f.text));
  const flags: EditorFlags = {};
  for (const { word: cmd } of args.commands) {
    out.code.push(cmd); // its strings; one only known when it runs fails closed
    if (cmd.dynamic) continue;
    const read = exCommands(cmd.text);
    // A command whose last command ends vim ends it there, before its input (`q!`; `wq`, `x` writing a file).
    ends ||= read.quits === "always" || (read.quits === "written" && args.files.length > 0);
    sourcesInput ||= (read.sourced ?? []).some((f) => isStdinPath(f));
    out.shell.push(...read.shell.map(literalWord));
    out.problems!.push(...read.problems);
    flags.maps ||= read.maps, flags.typed ||= read.typed;
  }
  if (flags.maps && flags.typed) out.problems!.push(MAPPED_KEYS);
  if ((args.ex && !ends) || sourcesInput) {
    out.fromInput = true;
    out.editorInput = true;
    out.editorFlags = flags;
  }
  return out.code.length + out.shell.length + out.problems!.length > 0 || out.fromInput ? out : null;
}

/** Why keys typed after a mapping is defined cannot be read. */
export const MAPPED_KEYS = "vim types keys (:normal, feedkeys()) after a mapping is defined: what they run is unknown";

/** The most strings read from one program's code; more fail closed. */
export const MAX_CODE_STRINGS = 2000;

/**
 * The command lines a program's code spells out in string literals: each literal, literals joined by `,` (with a
 * space: `["git", "push"]`) or by `+`, `.` or nothing (without: `"gi" + "t push"`), each run of joined literals from
 * each of its literals on (`["sudo", "git", "push"]` holds `git push`), each literal alone, backquoted text, Perl's and Ruby's
 * quote operators (`qx{…}`, `q(…)`, `%w(…)`), and the strings of code held in a string (`exec("…")`), two deep;
 * comments are skipped. Null when it holds more than {@link MAX_CODE_STRINGS} literals.
 *
 * @example
 * ```ts
 * import { codeStrings } from "./interpreters.ts";
 * codeStrings(`subprocess.run(["git", "push"])`, "#"); // ["git push", "git", "push"]
 * ```
 */
export function codeStrings(code: string, comment: Comment, depth = 0): string[] | null {
  const out: string[] = [];
  let group: { text: string; joiner: string }[] = [];
  let joiner = "", count = 0, i = 0, inner = true;
  const flush = () => {
    // Every run of the group from each literal on (a command may follow the program's own words in a list).
    for (let a = 0; a < group.length && a < 8; a++) {
      out.push(group.slice(a).map((g, b) => (b === 0 ? "" : g.joiner) + g.text).join(""));
      if (a < group.length - 1) out.push(group[a].text); // each literal alone too: a path (`open("x", "w")`)
    }
    // Code in a string (`exec("os.system('git push')")`, `eval`): its own strings too.
    for (const g of depth < 2 ? group : []) {
      const nested = /["'`]/.test(g.text) ? codeStrings(g.text, comment, depth + 1) : [];
      if (nested === null) inner = false;
      else out.push(...nested);
    }
    group = [];
    joiner = "";
  };
  while (i < code.length) {
    const skip = commentEnd(code, i, comment);
    if (skip > i) {
      flush();
      i = skip;
      continue;
    }
    const lit = literalAt(code, i);
    if (lit === null) {
      flush();
      i++;
      continue;
    }
    if (++count > MAX_CODE_STRINGS) return null;
    group.push({ text: lit.text, joiner });
    // What joins it to a next literal: `,`, `+`, `.`, brackets, `args:` (`spawn("git", ["push"])`); a `,` or `:`
    // joins with a space.
    GAP.lastIndex = lit.end;
    const gap = GAP.exec(code)![0];
    joiner = /[,:]/.test(gap) ? " " : "";
    i = lit.end + gap.length;
    if (literalAt(code, i) === null) flush();
  }
  flush();
  return inner ? out : null;
}

/** The text between two literals that joins them into one command line. */
const GAP = /(?:[\s,+.[\](){}]|\bargs\s*:)*/y;

/** Where a comment starting at `i` ends (`i` itself when none starts there). */
function commentEnd(code: string, i: number, comment: Comment): number {
  if (comment === null) return i;
  if (comment === "//" && code.startsWith("/*", i)) {
    const end = code.indexOf("*/", i + 2);
    return end === -1 ? code.length : end + 2;
  }
  if (!code.startsWith(comment, i)) return i;
  const end = code.indexOf("\n", i);
  return end === -1 ? code.length : end + 1;
}

/** Perl's and Ruby's quote-like operators (`qx{…}`, `q(…)`, `qw[…]`, `%x(…)`, `%w(…)`), and closing delimiters. */
const QX = /^(?:qx|qq|qw|q|%x|%q|%Q|%w|%W|%)([({[<|/!])/;
const CLOSE: Record<string, string> = { "(": ")", "[": "]", "{": "}", "<": ">" };

/** The string literal starting at `i` (`'…'`, `"…"`, `` `…` ``, `'''…'''`, `"""…"""`, `qx{…}`), or null. */
function literalAt(code: string, i: number): { text: string; end: number } | null {
  const qx = i > 0 && /\w/.test(code[i - 1]) ? null : QX.exec(code.slice(i, i + 4));
  let quote: string;
  if (qx !== null) {
    quote = CLOSE[qx[1]] ?? qx[1];
    i += qx[0].length - 1;
  } else if (code[i] === '"' || code[i] === "'" || code[i] === "`") {
    quote = code.startsWith(code[i].repeat(3), i) ? code[i].repeat(3) : code[i];
    i += quote.length - 1;
  } else return null;
  let text = "";
  let k = i + 1;
  while (k < code.length && !code.startsWith(quote, k)) {
    if (code[k] === "\\" && k + 1 < code.length) {
      const e = code[k + 1];
      text += e === "n" ? "\n" : e === "t" ? "\t" : e;
      k += 2;
      continue;
    }
    text += code[k++];
  }
  return { text, end: Math.min(code.length, k + quote.length) };
}
