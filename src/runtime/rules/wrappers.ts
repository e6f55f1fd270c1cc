/**
 * What a command that runs another command runs: the wrappers `unwrap.ts`
 * peels (`env`, `nice`, `timeout`, `sudo`, `flock`, `ssh`…), the shells and
 * `source`/`.` that run a script, and how each gives its command away — as
 * words (`nice -n 5 git push` runs `git push`), as a script to read as a
 * command line of its own (`flock l -c 'git push'`, `env -S'git push'`,
 * `ssh host git push`), as a script on its input (`bash <<< 'git push'`,
 * `source /dev/stdin`), as a script file (`bash <(…)`, `. "$F"`), or as
 * something that cannot be known here (a dynamic option word).
 *
 * @module
 */
import { runnerOf, runnerScript } from "./runners.ts";
import { PAIRS, POSITIONALS, VALUE_OPTIONS } from "./wrapper_table.ts";
import { windowsShellInner } from "./windows_shells.ts";
import { joinWords, literalWord, type ShellWord, UNKNOWN_ARGUMENTS, wordFrom } from "./shell.ts";
import { expandLong, longNames } from "./long_options.ts";
import { ownEntry } from "../../json.ts";

/** What a wrapper runs. */
export type Inner =
  /** These words, as a command (peeled again). */
  | { kind: "command"; words: ShellWord[] }
  /** This text, read as a command line. */
  | { kind: "script"; script: ShellWord }
  /** A script on its input: the here-document or here-string given to it, or unknown. */
  | { kind: "stdin" }
  /** A script file: read when it is the input (`/dev/stdin`), unknown when it comes from an expansion. */
  | { kind: "file"; file: ShellWord }
  /** Something that cannot be known before it runs: fail closed, saying why. */
  | { kind: "unknown"; why: string };

/** Shells: `-c` scripts, here-documents and script files. */
export const SHELLS: ReadonlySet<string> = new Set([
  "sh",
  "bash",
  "rbash",
  "zsh",
  "dash",
  "ksh",
  "ksh93",
  "mksh",
  "pdksh",
  "ash",
  "yash",
  "posh",
  "fish",
  "csh",
  "tcsh",
  "busybox",
]);

/**
 * Whether a program name is a wrapper `afterOptions` knows.
 *
 * @example
 * ```ts
 * import { isWrapper } from "./wrappers.ts";
 * isWrapper("nice"); // true
 * ```
 */
export function isWrapper(name: string): boolean {
  return Object.hasOwn(VALUE_OPTIONS, name);
}

/**
 * Where the words after a wrapper's own options and positionals start (may be `words.length` or past it). `flip`
 * is the index of one option word to read with the other arity (a flag taking a value, or a value option none).
 *
 * @example
 * ```ts
 * import { afterOptionsAt } from "./wrappers.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * afterOptionsAt("nice", ["nice", "-n", "5", "git", "push"].map(w)); // 3
 * ```
 */
export function afterOptionsAt(name: string, words: readonly ShellWord[], flip = -1): number {
  const table = VALUE_OPTIONS[name];
  // A long option abbreviated (`timeout --sig KILL`, `xargs --arg f`) takes a value as the option does.
  const known = {
    test: (o: string) => table.test(o) || (!o.includes("=") && expandLong(o, longNames(table)) !== null),
  };
  const pairs = ownEntry(PAIRS, name) ?? null;
  let i = 1;
  while (i < words.length) {
    const w = words[i].text;
    // `flip`: the index of an option word read with the other arity (a version of the program noema does not know).
    const takesValue = i === flip ? { test: (o: string) => !known.test(o) } : known;
    if (w === "--") {
      i++;
      break;
    }
    if (!w.startsWith("-") || w === "-" || words[i].dynamic && !words[i].literal.startsWith("-")) break;
    if (!w.startsWith("--") && w.length > 2 && !takesValue.test(w)) {
      // A cluster: `-iu root`, `-fo FILE` take the next word; `-n5`, `-sKILL` hold their value.
      const k = [...w.slice(1)].findIndex((c) => known.test(`-${c}`));
      i += (k === w.length - 2) !== (i === flip) ? 2 : 1;
      continue;
    }
    i += pairs?.test(w) && i !== flip ? 3 : takesValue.test(w) ? 2 : 1;
  }
  return i + (ownEntry(POSITIONALS, name) ?? 0);
}

/**
 * The words after a wrapper's own options and positionals, or null when nothing follows.
 *
 * @example
 * ```ts
 * import { afterOptions } from "./wrappers.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * afterOptions("timeout", ["timeout", "-s", "KILL", "5", "git", "push"].map(w))?.length; // 2
 * ```
 */
export function afterOptions(name: string, words: readonly ShellWord[]): ShellWord[] | null {
  const i = afterOptionsAt(name, words);
  return i < words.length ? words.slice(i) : null;
}

/** `env`'s long options that take a value. */
const ENV_LONG_VALUES = ["--split-string", "--unset", "--chdir", "--argv0"];

/** `env`'s short options that take a value (the rest of the word, or the next word). */
const ENV_VALUE = new Set(["u", "C", "a", "S", "P", "L", "U"]);
/** A word env takes for a variable: any holding "=" that is no option. */
const ASSIGNMENT = /^[^-][^=]*=/;

/**
 * What `env` runs: `env -i A=1 git push`, `env - git push`, `env -S'git push'`, `env -iS"…"`,
 * `env --split-string=…`. The split string is read again as `env`'s own arguments (it may hold options).
 */
function envInner(words: readonly ShellWord[]): Inner | null {
  for (let i = 1; i < words.length; i++) {
    const w = words[i], t = w.text;
    // env takes any word holding "=" before the command for a variable (`a[0]=1`, `BASH_FUNC_f%%=…`): one only known
    // when it runs may be one.
    if (w.dynamic && (w.literal.startsWith("-") || !w.literal.includes("="))) {
      return { kind: "unknown", why: `env's argument ${t} is only known when it runs` };
    }
    if (t === "--") return i + 1 < words.length ? { kind: "command", words: words.slice(i + 1) } : null;
    if (ASSIGNMENT.test(t) || w.dynamic || t === "-") continue;
    const long = expandLong(t, ENV_LONG_VALUES); // abbreviated too: `env --sp='git push'`
    if (long === "--split-string") {
      const eq = t.indexOf("=");
      const value = eq !== -1 ? wordFrom(w, eq + 1) : words[i + 1];
      return envSplit(value?.text ?? "", value?.dynamic === true, words.slice(i + (eq !== -1 ? 1 : 2)));
    }
    if (t.startsWith("--")) {
      if (long !== null && !t.includes("=")) i++;
      continue;
    }
    if (!t.startsWith("-")) return { kind: "command", words: words.slice(i) };
    for (let k = 1; k < t.length; k++) {
      if (!ENV_VALUE.has(t[k])) continue;
      const inline = k + 1 < t.length;
      const value = inline ? t.slice(k + 1) : words[i + 1]?.text ?? "";
      const dynamic = !inline && words[i + 1]?.dynamic === true;
      if (t[k] === "S") return envSplit(value, dynamic, words.slice(i + (inline ? 1 : 2)));
      if (k + 1 === t.length) i++;
      break;
    }
  }
  return null;
}

/** `env -S STRING rest…`: runs `env` again on the split string's words (`\_` is a space in it), then `rest`. */
function envSplit(value: string, valueDynamic: boolean, rest: readonly ShellWord[]): Inner {
  const text = ["env", value.replaceAll("\\_", " "), ...rest.map((w) => w.text)].join(" ");
  const dynamic = valueDynamic || rest.some((w) => w.dynamic);
  return { kind: "script", script: { text, dynamic, literal: dynamic ? "" : text } };
}

/** A shell's options that take a value as the next word. */
const SHELL_VALUE = /^([-+][oO]|--rcfile|--init-file|--emulate)$/;

/** What a shell runs: its `-c` script, a script file, or its input. */
function shellInner(words: readonly ShellWord[]): Inner {
  let command = false, stdin = false;
  for (let i = 1; i < words.length; i++) {
    const w = words[i], t = w.text;
    if (w.dynamic) {
      if (command) return { kind: "script", script: w };
      return w.literal.startsWith("-") || w.literal.startsWith("+")
        ? { kind: "unknown", why: `${words[0].text} gets ${t} as an option, only known when it runs` }
        : { kind: "file", file: w };
    }
    if (t === "--" || t === "-") {
      const next = words[i + 1];
      if (command) return { kind: "script", script: next ?? literalWord("") };
      return next === undefined || stdin ? { kind: "stdin" } : { kind: "file", file: next };
    }
    if (SHELL_VALUE.test(t)) {
      i++;
      continue;
    }
    if (/^-[A-Za-z]*c[A-Za-z]*$/.test(t) || t === "--command") command = true;
    else if (/^-[A-Za-z]*s[A-Za-z]*$/.test(t)) stdin = true;
    if (t.startsWith("-") || t.startsWith("+")) continue;
    if (command) return { kind: "script", script: w };
    return stdin ? { kind: "stdin" } : { kind: "file", file: w };
  }
  return command ? { kind: "script", script: literalWord("") } : { kind: "stdin" };
}

/** `flock [options] FILE -c SCRIPT` or `flock [options] FILE COMMAND…`. */
function flockInner(words: readonly ShellWord[]): Inner | null {
  const i = afterOptionsAt("flock", words);
  // After the file, flock compares the word with -c and --command whole (no abbreviation there).
  if (/^(-c|--command)$/.test(words[i]?.text ?? "")) return { kind: "script", script: words[i + 1] ?? literalWord("") };
  return i < words.length ? { kind: "command", words: words.slice(i) } : null;
}

/** ssh options that run a local command (`-o ProxyCommand=…`). */
const SSH_COMMANDS = /^(ProxyCommand|LocalCommand|KnownHostsCommand|RemoteCommand)(?:\s*=\s*|\s+)(.*)$/is;

/**
 * `ssh [options] HOST [options] [COMMAND…]`: the command is a script for the remote shell (none: it reads its
 * input); a `-o ProxyCommand=…` (or `LocalCommand`, `KnownHostsCommand`) runs on this machine, read too.
 */
function sshInner(words: readonly ShellWord[]): Inner | null {
  const scripts: ShellWord[] = [];
  for (let k = 1; k < words.length; k++) {
    const t = words[k].text;
    const value = t === "-o" ? words[k + 1] : t.startsWith("-o") ? { ...words[k], text: t.slice(2) } : undefined;
    const m = value === undefined ? null : SSH_COMMANDS.exec(value.text);
    if (m) scripts.push(value!.dynamic ? value! : literalWord(m[2]));
  }
  let i = afterOptionsAt("ssh", words);
  if (i > words.length && scripts.length === 0) return null;
  // ssh reads options after the host too.
  while (i < words.length && words[i].text.startsWith("-")) i += VALUE_OPTIONS.ssh.test(words[i].text) ? 2 : 1;
  if (i < words.length) scripts.push(joinWords(words.slice(i)));
  else if (scripts.length === 0) return { kind: "stdin" };
  const dynamic = scripts.some((w) => w.dynamic);
  const text = scripts.map((w) => w.text).join("\n");
  return { kind: "script", script: { text, dynamic, literal: dynamic ? "" : text } };
}

/** `source FILE` / `. FILE`: the file is a script; only known when it is the input or an expansion. */
function sourceInner(words: readonly ShellWord[]): Inner | null {
  const file = words[1]?.text === "--" ? words[2] : words[1];
  return file === undefined ? null : { kind: "file", file };
}

const STDIN: Inner = { kind: "stdin" };

/** `sudo -s`, `sudo -i`: through a shell. */
function shellFlag(words: readonly ShellWord[]): boolean {
  return words.some((w) => /^(-[a-zA-Z]*[si][a-zA-Z]*|--shell|--login)$/.test(w.text));
}

/**
 * What a wrapper, shell or `source` runs, or null when `name` runs nothing more (or is not one of them).
 *
 * @example
 * ```ts
 * import { innerOf } from "./wrappers.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * innerOf("flock", ["flock", "/tmp/l", "-c", "git push"].map(w)); // { kind: "script", script: … "git push" }
 * ```
 */
export function innerOf(name: string, words: readonly ShellWord[]): Inner | null {
  if (name === "busybox") return words.length > 1 ? { kind: "command", words: words.slice(1) } : null;
  if (SHELLS.has(name)) return shellInner(words);
  if (name === "env") return envInner(words);
  if (name === "flock") return flockInner(words);
  if (name === "ssh") return sshInner(words);
  if (name === "source" || name === ".") return sourceInner(words);
  const windows = windowsShellInner(name, words);
  if (windows !== undefined) return windows;
  const named = programAlias(name, words);
  if (named !== null) return { kind: "command", words: named };
  const runner = runnerOf(name, words);
  if (runner !== null) return runnerInner(runner.name, runner.words);
  if (!isWrapper(name)) return null;
  // `setarch ARCH [options] [command]`: the architecture comes before the options.
  const rest = name === "setarch"
    ? (words.length > 2 ? afterOptions(name, [words[0], ...words.slice(2)]) : null)
    : afterOptions(name, words);
  // With no command, these start a shell that reads its input.
  if (rest === null) {
    return /^(chroot|unshare|setarch|linux32|linux64|i386|x86_64|uname26)$/.test(name) ||
        (name === "sudo" || name === "doas") && shellFlag(words)
      ? STDIN
      : null;
  }
  if (name === "watch") return { kind: "script", script: joinWords(rest) };
  return { kind: "command", words: name === "xargs" ? xargsCommand(words, rest) : rest };
}

/** Package managers `corepack` runs (`corepack pnpm@9 exec …`). */
const COREPACK = /^(npm|npx|pnpm|pnpx|yarn|yarnpkg)(@.*)?$/s;

/**
 * The command a program runs under another name: `hub X` is `git X`, `git-push` (git's own programs, also by path:
 * `/usr/lib/git-core/git-push`) is `git push`, `corepack pnpm …` is `pnpm …`; null for any other.
 */
function programAlias(name: string, words: readonly ShellWord[]): ShellWord[] | null {
  if (name === "hub") return [literalWord("git"), ...words.slice(1)];
  const dashed = /^git-([a-z][a-z0-9-]*)$/.exec(name);
  if (dashed !== null) return [literalWord("git"), literalWord(dashed[1]), ...words.slice(1)];
  const pm = name === "corepack" && words[1] && !words[1].dynamic ? COREPACK.exec(words[1].text) : null;
  return pm === null ? null : [literalWord(pm[1]), ...words.slice(2)];
}

/** What a runner (`runners.ts`) runs: its script, or its command words (after a `--` that ends its own words). */
function runnerInner(name: string, words: readonly ShellWord[]): Inner | null {
  const end = afterOptionsAt(name, words);
  const special = runnerScript(name, words, end);
  if (special !== undefined) return special;
  const rest = words.slice(words[end]?.text === "--" ? end + 1 : end);
  return rest.length > 0 ? { kind: "command", words: rest } : null;
}

/**
 * The command `xargs` runs: its words with the replace string (`-I R`, `-i`, `--replace`) unknown, since xargs puts
 * its input there (`xargs -I{} sh -c '{}'` runs what it reads), and unknown arguments after them.
 */
function xargsCommand(words: readonly ShellWord[], rest: readonly ShellWord[]): ShellWord[] {
  let replace: string | null = null;
  for (let k = 1; k < words.length - rest.length; k++) {
    const t = words[k].text;
    if (t === "-I") replace = words[k + 1]?.text ?? null;
    else if (/^-I./s.test(t)) replace = t.slice(2);
    else if (t === "-i" || t === "--replace") replace = "{}";
    else if (/^(-i|--replace=)./s.test(t)) replace = t.replace(/^(-i|--replace=)/, "");
  }
  const marked = replace === null || replace === ""
    ? rest
    : rest.map((w) =>
      w.text.includes(replace!) ? { text: w.text, dynamic: true, literal: w.literal.split(replace!)[0] } : w
    );
  return [...marked, UNKNOWN_ARGUMENTS];
}
