/**
 * From a command line to the commands a `Bash(...)` rule is checked against.
 *
 * Each simple command (see `shell.ts`) becomes a *unit*: the list of its
 * *stages*, from the command as written to the command it finally runs once
 * the wrappers that only run another command are peeled off: variable
 * assignments (`FOO=1 git push`), `command`, `builtin`, `exec`, `env`,
 * `nice`, `nohup`, `time`, `timeout`, `stdbuf`, `setsid`, `ionice`, `sudo`,
 * `doas`, `xargs`, `flock`, `strace`, `taskset`, `chrt`, `unbuffer`, and shell keywords (`then git push`); `git`'s
 * own options before its subcommand (`git -C dir push`). An absolute
 * or relative program path counts by its name (`/usr/bin/git` is `git`).
 * Scripts run by other means are read as command lines of their own: `sh -c`,
 * `bash -c` (any shell), `eval`, `env -S`, `watch`, the here-document or
 * here-string a shell reads from stdin, `alias` values, `trap` actions, and
 * `find -exec` commands. A script whose text is not known (`sh -c "$X"`) is
 * reported as a problem: the rules fail closed on it.
 *
 * @module
 */
import { isKeyword, MAX_SHELL_DEPTH, parseShell, type Redirect, type ShellWord } from "./shell.ts";

/** One stage of a unit: the words of a command. */
export type Stage = ShellWord[];

/** The commands a command line runs, each with its stages, or why it cannot be told. */
export interface CommandUnits {
  /** Each simple command's stages, outermost first. */
  units: Stage[][];
  /** Why (part of) the line could not be read, or null. */
  problem: string | null;
  /** The redirections of every command read (those of `sh -c` scripts included). */
  redirects: Redirect[];
}

const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox"]);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;

/** Options of a wrapper that take a value (the next word, unless given as `--opt=value` or `-Xvalue`). */
const VALUE_OPTIONS: Record<string, RegExp> = {
  command: /^$/,
  builtin: /^$/,
  exec: /^-a$/,
  env: /^(-u|--unset|-C|--chdir)$/,
  nice: /^(-n|--adjustment)$/,
  nohup: /^$/,
  time: /^(-f|--format|-o|--output)$/,
  timeout: /^(-s|--signal|-k|--kill-after)$/,
  stdbuf: /^(-i|-o|-e|--input|--output|--error)$/,
  setsid: /^$/,
  ionice: /^(-c|--class|-n|--classdata|-p|--pid|-P|--pgid|-u|--uid)$/,
  sudo:
    /^(-u|--user|-g|--group|-h|--host|-p|--prompt|-C|--close-from|-D|--chdir|-r|--role|-t|--type|-U|--other-user|-T|--command-timeout)$/,
  doas: /^(-u|-C)$/,
  xargs:
    /^(-I|-L|-n|-P|-s|-d|-E|-a|--arg-file|--delimiter|--max-args|--max-lines|--max-procs|--max-chars|--replace|--eof|--process-slot-var)$/,
  flock: /^(-w|--timeout|-E|--conflict-exit-code)$/,
  watch: /^(-n|--interval|-d|--differences|-q|--equexit)$/,
  strace: /^(-e|-o|-s|-p|-u|-a|-b|-E|-I|-O|-P|-S|-X)$/,
  taskset: /^$/,
  chrt: /^$/,
  unbuffer: /^$/,
};

/** How many words after the options a wrapper takes before the command (`timeout 5 git`, `flock FILE git`). */
const POSITIONALS: Record<string, number> = { timeout: 1, flock: 1, taskset: 1, chrt: 1 };

function word(text: string): ShellWord {
  return { text, dynamic: false, literal: text };
}

/**
 * The program name of a command word: its last path segment (`/usr/bin/git` → `git`).
 *
 * @example
 * ```ts
 * import { programName } from "./unwrap.ts";
 * programName({ text: "/usr/bin/git", dynamic: false, literal: "/usr/bin/git" }); // "git"
 * ```
 */
export function programName(w: ShellWord): string {
  return w.dynamic ? w.text : w.text.slice(w.text.lastIndexOf("/") + 1);
}

/** The words after a wrapper's own options and positionals, or null when nothing follows. */
function afterOptions(name: string, words: Stage): Stage | null {
  const takesValue = VALUE_OPTIONS[name];
  let i = 1;
  while (i < words.length) {
    const w = words[i].text;
    if (w === "--") {
      i++;
      break;
    }
    if (name === "env" && ASSIGNMENT.test(w)) {
      i++;
      continue;
    }
    if (!w.startsWith("-") || w === "-" || words[i].dynamic && !words[i].literal.startsWith("-")) break;
    i += takesValue.test(w) ? 2 : 1;
  }
  i += POSITIONALS[name] ?? 0;
  return i < words.length ? words.slice(i) : null;
}

/** A shell's `-c` script, when it has one; `undefined` when it reads a file or stdin. */
function shellScript(words: Stage): ShellWord | undefined {
  for (let i = 1; i < words.length; i++) {
    const w = words[i].text;
    if (w === "-c" || /^-[A-Za-z]*c[A-Za-z]*$/.test(w)) {
      // The script is the first word after the options (`bash -c -e 'x'` is rare; `bash -ec 'x'` is common).
      let j = i + 1;
      while (j < words.length && /^[-+][A-Za-z]+$/.test(words[j].text) && words[j].text !== "--") j++;
      if (words[j]?.text === "--") j++;
      return words[j] ?? word("");
    }
    if (!w.startsWith("-") && !w.startsWith("+")) return undefined;
    if (w === "-o" || w === "+o" || w === "-O" || w === "+O") i++; // -o pipefail
  }
  return undefined;
}

interface Walk {
  units: Stage[][];
  problems: string[];
  redirects: Redirect[];
}

/** Peels the wrappers of one simple command: its stages, and the scripts it runs (read as units of their own). */
function stagesOf(first: Stage, heredoc: ShellWord | undefined, depth: number, walk: Walk): Stage[] {
  const stages: Stage[] = [];
  let words: Stage | null = first;
  while (words !== null && words.length > 0) {
    let i = 0;
    while (i < words.length && !words[i].dynamic) {
      const w = words[i].text;
      if (w === "function") i += 2; // function NAME { …; }
      else if (ASSIGNMENT.test(w) || isKeyword(w) || w === "coproc") i++;
      else break;
    }
    if (i >= words.length) break;
    words = words.slice(i);
    const name = programName(words[0]);
    const literal = words[0].dynamic ? words[0].literal.slice(words[0].literal.lastIndexOf("/") + 1) : name;
    stages.push([{ ...words[0], text: name, literal }, ...words.slice(1)]);
    if (words[0].dynamic) break;
    if (SHELLS.has(name)) {
      const rest: Stage | null = name === "busybox" ? words.slice(1) : null;
      if (rest !== null) {
        words = rest;
        continue;
      }
      const script = shellScript(words);
      const fromStdin = words.length === 1 || words.slice(1).some((w) => w.text === "-s");
      if (script !== undefined) readScript(script, depth, walk);
      else if (heredoc !== undefined) readScript(heredoc, depth, walk);
      // `echo 'git push' | sh`, `curl … | bash`: the script comes down a pipe, unknown here.
      else if (fromStdin) walk.problems.push(`${name} reads a script from its input, unknown until it runs`);
      break;
    }
    if (runsScripts(name, words, depth, walk)) break;
    if (name === "eval") {
      readScript(joinWords(words.slice(1)), depth, walk);
      break;
    }
    if (name === "env") {
      const split = words.findIndex((w, k) => k > 0 && /^(-S|--split-string)(=|$)/.test(w.text));
      if (split !== -1) {
        const w = words[split];
        const inline = w.text.replace(/^(-S|--split-string)=?/, "");
        const script = inline !== ""
          ? { ...w, text: inline, literal: w.literal.replace(/^(-S|--split-string)=?/, "") }
          : words[split + 1];
        readScript(joinWords([script ?? word(""), ...words.slice(split + 2)]), depth, walk);
        break;
      }
    }
    if (name === "watch") {
      const rest = afterOptions(name, words);
      if (rest !== null) readScript(joinWords(rest), depth, walk);
      break;
    }
    if (name === "git") {
      const bare = gitSubcommand(words);
      if (bare !== null) stages.push(bare);
      break;
    }
    if (!Object.hasOwn(VALUE_OPTIONS, name)) break;
    words = afterOptions(name, words);
  }
  return stages;
}

/** `git`'s options before its subcommand that take a value as the next word. */
const GIT_VALUE_OPTIONS = /^(-C|-c|--git-dir|--work-tree|--namespace|--exec-path|--config-env|--super-prefix)$/;

/** `git -C dir -c k=v push` as `git push` (its global options removed), or null when it has none. */
function gitSubcommand(words: Stage): Stage | null {
  let i = 1;
  while (i < words.length && words[i].text.startsWith("-") && !words[i].dynamic) {
    i += GIT_VALUE_OPTIONS.test(words[i].text) ? 2 : 1;
  }
  return i > 1 && i < words.length ? [{ ...words[0], text: "git", literal: "git" }, ...words.slice(i)] : null;
}

/** Commands that run text given to them later or elsewhere: `alias`, `trap`, `find -exec`. True when it was one. */
function runsScripts(name: string, words: Stage, depth: number, walk: Walk): boolean {
  if (name === "alias") {
    // alias p='git push' runs its value wherever p is used.
    for (const w of words.slice(1)) {
      const eq = w.text.indexOf("=");
      if (eq > 0) readScript({ ...w, text: w.text.slice(eq + 1), literal: w.literal.slice(eq + 1) }, depth, walk);
    }
    return true;
  }
  if (name === "su" || name === "runuser" || name === "script") {
    // su -c 'git push' user, script -qc 'git push' /dev/null: the -c argument is a script.
    const c = words.findIndex((w, k) =>
      k > 0 && (w.text === "-c" || w.text === "--command" || /^-[a-z]*c$/.test(w.text))
    );
    if (c !== -1) readScript(words[c + 1] ?? word(""), depth, walk);
    return true;
  }
  if (name === "trap") {
    const action = words.slice(1).find((w) => !w.text.startsWith("-"));
    if (action) readScript(action, depth, walk);
    return true;
  }
  if (name === "find") {
    for (let i = 1; i < words.length; i++) {
      if (!/^-(exec|execdir|ok|okdir)$/.test(words[i].text)) continue;
      let end = i + 1;
      while (end < words.length && words[end].text !== ";" && words[end].text !== "+") end++;
      const stages = stagesOf(words.slice(i + 1, end), undefined, depth, walk);
      if (stages.length > 0) walk.units.push(stages);
      i = end;
    }
  }
  return false;
}

function joinWords(words: readonly ShellWord[]): ShellWord {
  const dynamic = words.some((w) => w.dynamic);
  const text = words.map((w) => w.text).join(" ");
  const firstDynamic = words.findIndex((w) => w.dynamic);
  const literal = dynamic
    ? [...words.slice(0, firstDynamic).map((w) => w.text), words[firstDynamic].literal].join(" ")
    : text;
  return { text, dynamic, literal };
}

/** Reads a script run by a command (`sh -c`, `eval`…) as a command line of its own. */
function readScript(script: ShellWord, depth: number, walk: Walk): void {
  if (script.dynamic) {
    walk.problems.push(`a script whose text is not known until it runs: ${script.text}`);
    return;
  }
  collect(script.text, depth + 1, walk);
}

function collect(text: string, depth: number, walk: Walk): void {
  if (depth > MAX_SHELL_DEPTH) {
    walk.problems.push(`scripts nested deeper than ${MAX_SHELL_DEPTH}`);
    return;
  }
  const parsed = parseShell(text, depth);
  if (parsed.problem !== null) walk.problems.push(parsed.problem);
  for (const c of parsed.commands) {
    if (c.redirects) walk.redirects.push(...c.redirects);
    const stages = stagesOf(c.words, c.heredoc, depth, walk);
    if (stages.length > 0) walk.units.push(stages);
  }
}

/**
 * The commands a command line runs, each with its stages (outermost first).
 *
 * @example
 * ```ts
 * import { commandUnits } from "./unwrap.ts";
 * const { units } = commandUnits("cd x && FOO=1 command /usr/bin/git push");
 * units[1].at(-1)!.map((w) => w.text).join(" "); // "git push"
 * ```
 */
export function commandUnits(text: string): CommandUnits {
  const walk: Walk = { units: [], problems: [], redirects: [] };
  collect(text, 0, walk);
  return { units: walk.units, problem: walk.problems[0] ?? null, redirects: walk.redirects };
}
