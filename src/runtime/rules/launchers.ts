/**
 * Programs that start a command named by their options or rules: a debugger (`gdb --args git push`, `gdb -ex 'shell
 * git push'`, `gdb -ex '!git push'`, and gdb's prefixes of them: `she git push`), a service starter (`start-stop-daemon --start --exec /usr/bin/git -- push`), and
 * make (where it takes its rules from, and the shell commands a makefile's recipes and `$(shell …)` run). `unwrap.ts`
 * reads each command as one of its own; gdb's `pipe` (a shell command after a `|`), `eval` and `interpreter-exec`
 * fail closed.
 *
 * @module
 */
import { posix } from "node:path";
import type { Runs } from "./command_options.ts";
import { isStdinPath, literalWord, type ShellWord, wordFrom } from "./shell.ts";
import { SHELLS } from "./wrappers.ts";

/** gdb's options whose value is one of its commands. */
const GDB_COMMAND = /^--?(ex|eval-command|iex|init-eval-command)(=|$)/;
/** The most gdb commands nested in one (`with … -- CMD`, `thread apply all CMD`) that are read. */
const GDB_DEPTH = 4;

/** Whether `word` is a prefix gdb takes for `command` (any unique prefix: `she` is `shell`), at least `shortest` long. */
function gdbPrefix(word: string, command: string, shortest: number): boolean {
  return word.length >= shortest && command.startsWith(word);
}

/**
 * The shell command a gdb command runs (`shell CMD` and its prefixes `she`, `shel`; `!CMD`; `make ARGS`), or why it
 * cannot be read (`pipe`/`|`, `eval` and `interpreter-exec`, which build or hand on commands, an `alias` of one that
 * runs a shell); a command after `with … --` or that `thread apply`, `frame apply`, `taas`, `faas` and `tfaas` run is
 * read in turn. Null when it runs none.
 *
 * @example
 * ```ts
 * import { gdbShell } from "./launchers.ts";
 * gdbShell("she git push"); // { script: "git push" }
 * ```
 */
export function gdbShell(text: string, depth = 0): { script: string } | { problem: string } | null {
  const t = text.trimStart();
  if (t.startsWith("!")) return { script: t.slice(1) };
  if (t.startsWith("|")) return { problem: `gdb's ${t.trim()} runs a shell command` };
  const m = /^([A-Za-z][\w-]*)\s*/.exec(t);
  if (m === null) return null;
  const word = m[1], rest = t.slice(m[0].length);
  if (gdbPrefix(word, "shell", 2)) return { script: rest };
  if (gdbPrefix(word, "make", 3)) return { script: `make ${rest}` };
  if (gdbPrefix(word, "pipe", 3)) return { problem: `gdb's ${t.trim()} runs a shell command` };
  if (gdbPrefix(word, "eval", 2) || gdbPrefix(word, "interpreter-exec", 6)) {
    return { problem: `gdb's ${word} runs a command it builds: ${t.trim()}` };
  }
  if (depth >= GDB_DEPTH) return { problem: `gdb commands nested deeper than ${GDB_DEPTH}` };
  if (gdbPrefix(word, "alias", 3)) {
    const target = rest.indexOf("=") === -1 ? null : gdbShell(rest.slice(rest.indexOf("=") + 1), depth + 1);
    return target === null ? null : { problem: `gdb's alias names a command that runs a shell: ${t.trim()}` };
  }
  if (!/^(w|with|taas|faas|tfaas)$/.test(word) && !gdbPrefix(word, "thread", 1) && !gdbPrefix(word, "frame", 1)) {
    return null;
  }
  // The command it runs follows its own words: read from each word on (a word taken for a command over-reads).
  for (const at of rest.matchAll(/(?:^|\s)(?=[^\s-])/g)) {
    const inner = gdbShell(rest.slice(at.index + at[0].length), depth + 1);
    if (inner !== null) return inner;
  }
  return null;
}

/**
 * gdb's command line: the commands its `-ex`/`-iex` options give it, in order, and the program after `--args` (null
 * without one). `launcherRuns` reads their shell commands, `interpreters.ts` their Python.
 *
 * @example
 * ```ts
 * import { gdbCommands } from "./launchers.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * gdbCommands(["gdb", "-ex", "run", "--args", "git", "push"].map(w)).program?.length; // 2
 * ```
 */
export function gdbCommands(words: readonly ShellWord[]): { commands: ShellWord[]; program: ShellWord[] | null } {
  const commands: ShellWord[] = [];
  for (let k = 1; k < words.length; k++) {
    const t = words[k].text;
    if (t === "--args" || t === "-args") return { commands, program: k + 1 < words.length ? words.slice(k + 1) : null };
    const m = GDB_COMMAND.exec(t);
    if (m === null) continue;
    const value = m[2] === "=" ? wordFrom(words[k], m[0].length) : words[++k];
    if (value !== undefined) commands.push(value);
  }
  return { commands, program: null };
}

/** gdb's options whose value is a file of commands. */
const GDB_FILE = /^--?(x|command|ix|init-command)(=|$)/;

/**
 * Whether gdb reads commands from its input: without `-batch` (after its options' commands, unless the last one is
 * `quit`), or with it as a command file (`-x /dev/stdin`, `-ex 'source /dev/stdin'`).
 *
 * @example
 * ```ts
 * import { gdbReadsInput } from "./launchers.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * gdbReadsInput(["gdb", "-q", "./a.out"].map(w)); // true
 * gdbReadsInput(["gdb", "-batch", "-ex", "bt", "./a.out"].map(w)); // false
 * ```
 */
export function gdbReadsInput(words: readonly ShellWord[]): boolean {
  const { commands, program } = gdbCommands(words);
  const options = program === null ? words : words.slice(0, words.length - program.length);
  const files: ShellWord[] = [];
  for (let k = 1; k < options.length; k++) {
    const m = GDB_FILE.exec(options[k].text);
    if (m !== null) files.push(m[2] === "=" ? wordFrom(options[k], m[0].length) : options[++k]);
  }
  const sourced = commands.flatMap((c) => {
    const m = c.dynamic ? null : /^\s*so(?:u(?:r(?:c(?:e)?)?)?)?\s+(?:-[sv]\s+)*(\S+)/.exec(c.text);
    return m === null ? [] : [literalWord(m[1])];
  });
  if ([...files, ...sourced].some((f) => f !== undefined && !f.dynamic && isStdinPath(f.text))) return true;
  if (options.some((w) => /^--?(batch|batch-silent|version|help|configuration|h)$/.test(w.text))) return false;
  const last = commands.at(-1);
  return last === undefined || last.dynamic || !/^\s*(q|qu|qui|quit)(\s|$)/.test(last.text);
}

/**
 * The shell commands gdb's commands (its input, one a line) run, and why some cannot be read ({@link gdbShell}).
 *
 * @example
 * ```ts
 * import { gdbInputCommands } from "./launchers.ts";
 * gdbInputCommands("break main\nshell git push\n").shell; // ["git push"]
 * ```
 */
export function gdbInputCommands(text: string): { shell: string[]; problems: string[] } {
  const out: { shell: string[]; problems: string[] } = { shell: [], problems: [] };
  for (const line of text.split("\n")) {
    const read = gdbShell(line);
    if (read !== null && "problem" in read) out.problems.push(read.problem);
    else if (read !== null) out.shell.push(read.script);
  }
  return out;
}

/** What gdb runs: the program after `--args`, and the shell commands its `-ex` commands run. */
function gdbRuns(words: readonly ShellWord[]): Runs | null {
  const runs: Runs = { scripts: [], commands: [], problems: [] };
  const { commands, program } = gdbCommands(words);
  if (program !== null) runs.commands.push(program);
  for (const value of commands) {
    if (value.dynamic) {
      runs.problems.push(`gdb runs the command ${value.text}, unknown until it runs`);
      continue;
    }
    // Each line a command (`-ex 'define f\nshell …\nend'`).
    const read = gdbInputCommands(value.text);
    runs.problems.push(...read.problems);
    runs.scripts.push(...read.shell.map((script) => ({ script: literalWord(script), args: false })));
  }
  return runs.commands.length + runs.scripts.length + runs.problems.length > 0 ? runs : null;
}

/** start-stop-daemon's options that take a value. */
const SSD_VALUE =
  /^(-x|--exec|-a|--startas|-p|--pidfile|-n|--name|-u|--user|-c|--chuid|-g|--group|-r|--chroot|-d|--chdir|-N|--nicelevel|-P|--procsched|-I|--iosched|-k|--umask|-s|--signal|-R|--retry|--ppid|--notify-timeout|--output)$/;

/** What `start-stop-daemon --start` runs: the program `--startas` (else `--exec`) names, with the words after `--`. */
function startStopRuns(words: readonly ShellWord[]): Runs | null {
  let start = false, program: ShellWord | null = null, exec: ShellWord | null = null, k = 1;
  for (; k < words.length && words[k].text !== "--"; k++) {
    const t = words[k].text;
    if (/^(-S|--start)$/.test(t)) start = true;
    const eq = t.indexOf("=");
    const name = t.startsWith("--") && eq > 0 ? t.slice(0, eq) : t;
    if (!SSD_VALUE.test(name)) continue;
    const value = name === t ? words[++k] : wordFrom(words[k], eq + 1);
    if (/^(-a|--startas)$/.test(name)) program = value ?? null;
    if (/^(-x|--exec)$/.test(name)) exec = value ?? null;
  }
  const runs = program ?? exec;
  if (!start || runs === null) return null;
  return { scripts: [], commands: [[runs, ...words.slice(k + 1)]], problems: [] };
}

/**
 * What a debugger or service starter runs by its options; null when `name` is none of them, or runs nothing so.
 *
 * @example
 * ```ts
 * import { launcherRuns } from "./launchers.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * launcherRuns("gdb", ["gdb", "--args", "git", "push"].map(w))?.commands[0].map((x) => x.text); // ["git", "push"]
 * ```
 */
export function launcherRuns(name: string, words: readonly ShellWord[]): Runs | null {
  if (name === "gdb" || name === "cgdb") return gdbRuns(words);
  if (name === "start-stop-daemon") return startStopRuns(words);
  if (name === "socat") return socatRuns(words);
  return null;
}

/**
 * What socat runs: an `EXEC:` address runs its words, a `SYSTEM:` address a shell line (in any letter case, either
 * side of a `!!` pair; what follows the first comma is the address's options). One holding a backslash or a quote
 * (socat's own escapes), or known only when it runs, fails closed.
 */
function socatRuns(words: readonly ShellWord[]): Runs | null {
  const runs: Runs = { scripts: [], commands: [], problems: [] };
  for (const w of words.slice(1)) {
    for (const address of (w.dynamic ? w.literal : w.text).split("!!")) {
      const m = /^(exec|system):([^,]*)/i.exec(address);
      if (m === null) continue;
      if (w.dynamic || /[\\'"]/.test(m[2])) {
        runs.problems.push(`socat runs ${w.text.slice(0, 80)}, known only when it runs`);
      } else if (m[1].toLowerCase() === "system") runs.scripts.push({ script: literalWord(m[2]), args: false });
      else runs.commands.push(m[2].trim().split(/\s+/).filter(Boolean).map(literalWord));
    }
  }
  return runs.commands.length + runs.scripts.length + runs.problems.length > 0 ? runs : null;
}

/** make's options that take a value, and those that name its makefile or text to evaluate. */
const MAKE_VALUE = /^(-C|--directory|-I|--include-dir|-j|--jobs|-l|--load-average|-o|--old-file|-W|--what-if)$/;
const MAKE_FILE = /^(-f|--file|--makefile)$/;

/**
 * Where make takes its rules from: `--eval` texts, and the makefiles it reads (`-f F`, else its default names; under
 * `-C DIR`, there).
 *
 * @example
 * ```ts
 * import { makeSources } from "./launchers.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * makeSources(["make", "-C", "sub"].map(w)).files.map((f) => f.text); // ["sub/GNUmakefile", "sub/makefile", "sub/Makefile"]
 * ```
 */
export function makeSources(words: readonly ShellWord[]): { evals: ShellWord[]; files: ShellWord[] } {
  const evals: ShellWord[] = [], files: ShellWord[] = [];
  let dir = "";
  for (let k = 1; k < words.length; k++) {
    const t = words[k].text;
    if ((t === "-C" || t === "--directory") && words[k + 1] !== undefined) dir = posix.join(dir, words[++k].text);
    else if (t.startsWith("--directory=")) dir = posix.join(dir, t.slice(12));
    else if (t === "--eval" && words[k + 1] !== undefined) evals.push(words[++k]);
    else if (t.startsWith("--eval=")) evals.push(wordFrom(words[k], 7));
    else if (MAKE_FILE.test(t) && words[k + 1] !== undefined) files.push(words[++k]);
    else if (/^(--file|--makefile)=/.test(t)) files.push(wordFrom(words[k], t.indexOf("=") + 1));
    else if (/^-f./.test(t)) files.push(wordFrom(words[k], 2));
    else if (MAKE_VALUE.test(t)) k++;
  }
  if (files.length === 0) files.push(...["GNUmakefile", "makefile", "Makefile"].map(literalWord));
  // `make -C DIR` reads its makefiles there (a path from the root stays one).
  const inDir = (f: ShellWord) =>
    dir === "" || f.dynamic || f.text.startsWith("/") ? f : literalWord(posix.join(dir, f.text));
  return { evals, files: files.map(inDir) };
}

/** A make variable that chooses how recipes run: the shell, its flags. */
const MAKE_SHELL_VARIABLE =
  /^\s*(?:(?:override|export|private)\s+)*(SHELL|\.SHELLFLAGS|MAKESHELL)\s*(?:[:+?!]|::|:::)?=\s*(.*)$/;

/**
 * Why make would run its recipes with something else than a shell running them as written: a `SHELL` naming a program
 * that is not a shell, or `.SHELLFLAGS` that is not a shell's flags ending in `-c` (`make SHELL=rm .SHELLFLAGS=x`
 * runs `rm x RECIPE`), set on its command line, in MAKEFLAGS, by `--eval` or in a makefile read here; else null.
 *
 * @example
 * ```ts
 * import { makeShellProblem } from "./launchers.ts";
 * makeShellProblem("SHELL=rm"); // "make runs its recipes with SHELL=rm, not a shell noema reads"
 * makeShellProblem("SHELL=/bin/bash"); // null
 * ```
 */
export function makeShellProblem(text: string): string | null {
  for (const line of text.split("\n")) {
    const m = MAKE_SHELL_VARIABLE.exec(line);
    if (m === null) continue;
    const value = m[2].trim();
    const ok = m[1] === ".SHELLFLAGS"
      ? /^-[a-zA-Z]*c$/.test(value)
      : /^[\w./-]+$/.test(value) && SHELLS.has(value.slice(value.lastIndexOf("/") + 1));
    if (!ok) return `make runs its recipes with ${m[1]}=${value.slice(0, 60)}, not a shell noema reads`;
  }
  return null;
}

/**
 * The shell commands a makefile's text runs: its recipe lines (after a tab, or after `;` on a rule's line; `@`, `-`
 * and `+` set aside; `$$` is `$`), and its `$(shell …)` calls.
 *
 * @example
 * ```ts
 * import { makeRecipes } from "./launchers.ts";
 * makeRecipes("all:\n\t@git push\n"); // ["git push"]
 * ```
 */
export function makeRecipes(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split("\n")) {
    const recipe = line.startsWith("\t") ? line.slice(1) : /^[^\t#=]*[^:=]:[^=;]*;(.*)$/.exec(line)?.[1];
    if (recipe !== undefined) out.push(recipe.replace(/^[\s@+-]+/, "").replaceAll("$$", "$"));
  }
  for (const m of text.matchAll(/\$[({]shell\s+([^)}]*)[)}]/g)) out.push(m[1]);
  return out;
}
