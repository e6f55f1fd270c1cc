/**
 * What a `git` command runs besides git: the commands its settings and options name.
 *
 * git runs commands given to it in many ways, and a `Bash(git push:*)` deny rule must hold against each: an alias
 * its `-c` options define (`git -c alias.p=push p` runs `git push`; `git -c alias.p='!git push' p` runs a shell
 * command), a setting whose value is a command (`git -c core.pager='git push' log`, `core.sshCommand`,
 * `credential.helper='!…'`, `diff.external`, `filter.*.clean`…, `clone -c` too), and options of its subcommands that
 * take one (`rebase --exec`, `fetch --upload-pack`, `push --receive-pack`, `difftool --extcmd`, `filter-branch
 * --tree-filter`, `send-email --to-cmd`, `grep -O`, `submodule foreach`, `bisect run`). `gitRuns` lists them for
 * `unwrap.ts` to read as command lines of their own; what is only known when git runs (a setting from an
 * expansion or `--config-env`, an `ext::` transport) is a problem, so the rules fail closed on it.
 *
 * Settings in files (`git config alias.p push` run earlier, `include.path`, `core.hooksPath`) are not read: like
 * any script file, see docs/rules.md.
 *
 * @module
 */
import { type CommandOptions, optionValue, type Runs } from "./command_options.ts";
import { joinWords, literalWord, parseShell, type ShellWord, UNKNOWN_ARGUMENTS, wordFrom } from "./shell.ts";
import { ownEntry } from "../../json.ts";

/**
 * What one git command runs besides git itself: shell commands (setting values, option values, alias values
 * starting with `!`), commands as words (`git bisect run make test`), and why some of it is only known when it runs.
 */
export interface GitRuns extends Runs {
  /**
   * The git command an alias defined by its options stands for (`git -c alias.p=push p` →
   * `git -c alias.p=push push`: the options kept, the value may name another alias), or null.
   */
  expanded: ShellWord[] | null;
}

/** Settings whose value is a command git runs through a shell or as a program (keys in lower case). */
const COMMAND_SETTINGS =
  /^(core\.(pager|editor|sshcommand|askpass|fsmonitor|gitproxy|alternaterefscommand)|sequence\.editor|pager\..+|diff\.external|diff\..+\.(command|textconv)|merge\..+\.driver|filter\..+\.(clean|smudge|process)|gpg\.(.+\.)?program|gpg\.ssh\.defaultkeycommand|(diff|merge)tool\..+\.(cmd|path)|(browser|man)\..+\.(cmd|path)|sendemail\.(.+\.)?(sendmailcmd|tocmd|cccmd|headercmd)|remote\..+\.(uploadpack|receivepack)|uploadpack\.packobjectshook|interactive\.difffilter|trailer\..+\.(cmd|command)|instaweb\.httpd|credential\.(.+\.)?helper|submodule\..+\.update|sendemail\.(.+\.)?smtpserver)$/;
/** Of those, the ones git runs without arguments of its own (a pager reads its input). */
const NO_ARGS = /^(core\.pager|pager\..+|interactive\.difffilter)$/;
/** Settings that may also hold a word that is no command: a boolean (`pager.log=false`, `core.fsmonitor=true`). */
const MAY_BE_BOOLEAN = /^(pager\..+|core\.fsmonitor)$/;
const BOOLEAN = /^(true|false|yes|no|on|off|1|0|)$/i;
/** A URL rewritten to a transport that runs a command (`url.ext::sh -c … .insteadOf`), or the switch allowing it. */
const TRANSPORT_SETTINGS = /^(url\.ext::.*|protocol\.(ext\.)?allow)$/;

/** git's own options, before its subcommand, that take the next word as their value (`git -C dir push`). */
export const GIT_VALUE_OPTIONS: RegExp =
  /^(-C|-c|--git-dir|--work-tree|--namespace|--exec-path|--config-env|--super-prefix|--shallow-file|--attr-source)$/;

/** Options of git subcommands whose value is a shell command (`--exec=CMD`, `--exec CMD`; short ones `-xCMD` too). */
const COMMAND_OPTIONS: Record<string, CommandOptions> = {
  // option → whether git adds arguments after the command
  rebase: { "-x": false, "--exec": false },
  fetch: { "--upload-pack": true },
  pull: { "--upload-pack": true },
  clone: { "-u": true, "--upload-pack": true },
  "ls-remote": { "-u": true, "--upload-pack": true },
  "fetch-pack": { "--upload-pack": true, "--exec": true },
  push: { "--receive-pack": true, "--exec": true },
  "send-pack": { "--receive-pack": true, "--exec": true },
  archive: { "--exec": true },
  difftool: { "-x": true, "--extcmd": true },
  "filter-branch": Object.fromEntries(
    ["env", "tree", "index", "parent", "msg", "commit", "tag-name"].map((f) => [`--${f}-filter`, false])
      .concat([["--setup", false]]),
  ),
  "send-email": { "--to-cmd": true, "--cc-cmd": true, "--header-cmd": true, "--sendmail-cmd": true },
  instaweb: { "-d": true, "--httpd": true },
  daemon: { "--access-hook": true },
};
/** Options whose value is optional and so only given attached (`grep -Oless`, `--open-files-in-pager=less`). */
const ATTACHED_ONLY: Record<string, string[]> = { grep: ["-O", "--open-files-in-pager"] };

/** One `-c key=value` (or `--config-env key=VAR`) git is given. */
interface Setting {
  option: string;
  setting: ShellWord;
  /** Not read before (an alias expanded keeps the options it was read with). */
  fresh: boolean;
}

/** The settings among `words[start..end)`: git's `-c`, `--config-env`, and `clone`'s `-c`/`--config`. */
function settingsOf(words: readonly ShellWord[], start: number, end: number, clone: boolean, from: number): Setting[] {
  const out: Setting[] = [];
  for (let k = start; k < end; k++) {
    const fresh = k >= from;
    const o = words[k].text;
    const long = /^--(config-env|config)=/.exec(o);
    if (long && (long[1] === "config-env" || clone)) {
      out.push({ option: `--${long[1]}`, setting: wordFrom(words[k], long[0].length), fresh });
    } else if (o === "-c" || o === "--config-env" || (clone && o === "--config")) {
      if (words[k + 1] !== undefined) out.push({ option: o, setting: words[++k], fresh });
    } else if (clone && /^-c./.test(o)) out.push({ option: "-c", setting: wordFrom(words[k], 2), fresh });
  }
  return out;
}

/** Reads the settings: commands they name go to `runs`; the alias value for `sub`, if they define one. */
function readSettings(settings: Setting[], sub: ShellWord | undefined, runs: GitRuns): string | undefined {
  let alias: string | undefined;
  for (const { option, setting, fresh } of settings) {
    const eq = setting.text.indexOf("=");
    const key = (eq < 0 ? setting.text : setting.text.slice(0, eq)).toLowerCase();
    const isAlias = sub !== undefined && !sub.dynamic && key === `alias.${sub.text.toLowerCase()}`;
    if (!fresh && !isAlias) continue; // read when the alias was
    if (setting.dynamic && (eq < 0 || /[$`]/.test(setting.text.slice(0, eq)))) {
      runs.problems.push(`git's setting ${option} ${setting.text} is only known when it runs`);
      continue;
    }
    if (TRANSPORT_SETTINGS.test(key)) {
      runs.problems.push(`git's setting ${setting.text} lets a URL run a command, unknown until it runs`);
      continue;
    }
    if (eq < 0 || (!isAlias && !COMMAND_SETTINGS.test(key))) continue;
    if (option === "--config-env") {
      runs.problems.push(`git's setting ${key} comes from the environment (${setting.text}), unknown until it runs`);
      continue;
    }
    const value = wordFrom(setting, eq + 1);
    if (isAlias) alias = setting.dynamic ? "\0" : value.text; // the last one counts
    else settingRuns(key, value, runs);
  }
  return alias;
}

/** What the value of a command setting runs. */
function settingRuns(key: string, value: ShellWord, runs: GitRuns): void {
  if (!value.dynamic && MAY_BE_BOOLEAN.test(key) && BOOLEAN.test(value.text)) return;
  const args = !NO_ARGS.test(key);
  if (/^credential\./.test(key) || /^submodule\./.test(key)) {
    // `!cmd` is a shell command; credential.helper=NAME runs `git credential-NAME`; submodule update modes are words.
    if (value.literal.startsWith("!")) runs.scripts.push({ script: wordFrom(value, 1), args });
    else if (value.dynamic) runs.problems.push(`git's setting ${key} is ${value.text}, unknown until it runs`);
    else if (key.startsWith("credential.") && value.text !== "") {
      runs.scripts.push({
        script: literalWord(value.text.includes("/") ? value.text : `git credential-${value.text}`),
        args,
      });
    }
    return;
  }
  if (/smtpserver$/.test(key) && !value.literal.startsWith("/")) return; // a host name, not a program
  runs.scripts.push({ script: value, args });
}

/**
 * What an alias value runs: a `!` value is a shell command git gives the remaining arguments; any other value is
 * split into words as a shell would (quotes, backslashes) and runs as git's subcommand and options.
 */
function aliasRuns(
  value: string,
  head: readonly ShellWord[],
  bare: readonly ShellWord[],
  runs: GitRuns,
): ShellWord[] | null {
  const sub = bare[1].text;
  if (value === "\0") {
    runs.problems.push(`git runs its alias ${sub}, whose value is only known when it runs`);
    return null;
  }
  if (value.startsWith("!")) {
    runs.scripts.push({ script: literalWord(value.slice(1)), args: true });
    return null;
  }
  const parsed = parseShell(value, 1);
  const plain = parsed.problem === null && parsed.subshells.length === 0 && parsed.commands.length === 1 &&
    parsed.commands[0].heredoc === undefined && (parsed.commands[0].redirects?.length ?? 0) === 0 &&
    parsed.commands[0].words.every((w) => !w.dynamic);
  if (!plain) {
    runs.problems.push(`git's alias ${sub} is ${JSON.stringify(value)}, not plain words`);
    return null;
  }
  return [...head, ...parsed.commands[0].words, ...bare.slice(2)];
}

/** `git config` options that take a value, and those that make it read or remove rather than set. */
const CONFIG_VALUE_OPTIONS = /^(-f|--file|--blob|--type|--default|--comment|--value)$/;
const CONFIG_NOT_SETTING =
  /^(--get.*|--unset.*|-l|--list|-e|--edit|--remove-section|--rename-section|get|list|unset|edit|remove-section|rename-section)$/;

/**
 * `git config alias.p push` makes every later `git p` a `git push`, and `git config core.pager CMD` every later
 * `git log` run CMD: a setting stored is read as what it runs, the way an `alias` the shell stores is (the stored
 * alias with unknown arguments after it).
 */
function configRuns(rest: readonly ShellWord[], runs: GitRuns): void {
  const positionals: ShellWord[] = [];
  for (let k = 0; k < rest.length; k++) {
    const w = rest[k];
    if (CONFIG_NOT_SETTING.test(w.text) && (w.text.startsWith("-") || positionals.length === 0)) return;
    if (CONFIG_VALUE_OPTIONS.test(w.text)) k++;
    else if (w.text === "set" && positionals.length === 0) continue;
    else if (!w.text.startsWith("-") || positionals.length > 0) positionals.push(w);
  }
  const [setting, value] = positionals;
  if (setting === undefined || value === undefined) return;
  const key = setting.text.toLowerCase();
  if (setting.dynamic) runs.problems.push(`git config stores ${setting.text}, unknown until it runs`);
  else if (TRANSPORT_SETTINGS.test(key)) runs.problems.push(`git config ${setting.text} lets a URL run a command`);
  else if (key.startsWith("alias.") && value.literal.startsWith("!")) {
    runs.scripts.push({ script: wordFrom(value, 1), args: true });
  } else if (key.startsWith("alias.")) {
    runs.scripts.push({ script: joinWords([literalWord("git"), value]), args: true });
  } else if (COMMAND_SETTINGS.test(key)) settingRuns(key, value, runs);
}

/** What the options and arguments of git's subcommand run (`bare` is `git SUB …`). */
function subcommandRuns(bare: readonly ShellWord[], runs: GitRuns): void {
  const sub = bare[1]?.text ?? "";
  const rest = bare.slice(2);
  if (sub === "submodule" && rest.findIndex((w) => w.text === "foreach") !== -1) {
    let args = rest.slice(rest.findIndex((w) => w.text === "foreach") + 1);
    while (args[0]?.text.startsWith("-")) args = args.slice(1); // --recursive, -q
    if (args.length > 0) runs.scripts.push({ script: joinWords(args), args: false });
  }
  if (sub === "bisect" && rest[0]?.text === "run" && rest.length > 1) runs.commands.push(rest.slice(1));
  const subtree = sub === "subtree" ? rest.findIndex((w) => !w.text.startsWith("-")) : -1;
  if (subtree !== -1 && rest[subtree].text === "push") {
    // `git subtree push --prefix=DIR REMOTE REF` runs `git push REMOTE …`.
    const remote = rest.slice(subtree + 1).filter((w) => !w.text.startsWith("-")).slice(0, 1);
    runs.commands.push([literalWord("git"), literalWord("push"), ...remote, UNKNOWN_ARGUMENTS]);
  }
  if (sub === "config") configRuns(rest, runs);
  const options = ownEntry(COMMAND_OPTIONS, sub) ?? {};
  const attached = ownEntry(ATTACHED_ONLY, sub) ?? [];
  for (let k = 0; k < rest.length && rest[k].text !== "--"; k++) {
    const w = rest[k];
    if (!w.dynamic && /^ext::/.test(w.text)) {
      runs.problems.push(`git's transport ${w.text} runs a command (when allowed), not read here`);
    }
    const found = optionValue(rest, k, options);
    if (found !== null) {
      runs.scripts.push({ script: found.value, args: found.args });
      k = found.next;
      continue;
    }
    const a = attached.find((o) => w.text.startsWith(o) && w.text.length > o.length);
    if (a !== undefined) {
      runs.scripts.push({ script: wordFrom(w, a.length + (a.startsWith("--") ? 1 : 0)), args: true });
    }
  }
}

/**
 * What a git command runs besides git: `words` is the command as written (`git -c k=v SUB …`), `bare` the same
 * without git's own options (`git SUB …`); the settings among git's options from `settingsFrom` on are read (those
 * before it were read already, when an alias expanded); null when it runs nothing besides git.
 *
 * @example
 * ```ts
 * import { gitRuns } from "./git.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * const words = ["git", "-c", "alias.p=push", "p", "origin"].map(w);
 * gitRuns(words, [words[0], ...words.slice(3)], 1).expanded?.map((x) => x.text).join(" ");
 * // "git -c alias.p=push push origin"
 * ```
 */
export function gitRuns(
  words: readonly ShellWord[],
  bare: readonly ShellWord[],
  settingsFrom: number,
): GitRuns | null {
  const end = words.length - bare.length + 1; // git's own options are words[1..end)
  const sub = bare[1];
  const clone = sub?.text === "clone";
  const settings = [
    ...(end > 1 ? settingsOf(words, 1, end, false, settingsFrom) : []),
    ...(clone ? settingsOf(bare, 2, bare.length, true, 0) : []),
  ];
  if (settings.length === 0 && !mayRun(bare)) return null; // `git status`: the common case, nothing to read
  const runs: GitRuns = { scripts: [], commands: [], problems: [], expanded: null };
  const alias = readSettings(settings, sub, runs);
  subcommandRuns(bare, runs);
  if (alias !== undefined) runs.expanded = aliasRuns(alias, words.slice(0, end), bare, runs);
  return runs;
}

/** Subcommands whose options or arguments may run a command. */
const RUNNING_SUBCOMMANDS = new Set([
  ...Object.keys(COMMAND_OPTIONS),
  ...Object.keys(ATTACHED_ONLY),
  "config",
  "submodule",
  "bisect",
  "subtree",
]);

/** Whether `git SUB …` (no options of git's own) may run something: a subcommand that can, or an `ext::` word. */
function mayRun(bare: readonly ShellWord[]): boolean {
  if (bare[1] === undefined || RUNNING_SUBCOMMANDS.has(bare[1].text)) return true;
  for (let k = 2; k < bare.length; k++) if (bare[k].text.startsWith("ext::")) return true;
  return false;
}

/** Variables that give git settings (`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_KEY_<n>`). */
const CONFIG_VARIABLES = /^(GIT_CONFIG_PARAMETERS|GIT_CONFIG_KEY_\d+)$/;

/**
 * Why an assignment of git's settings through its environment may make git run a command (an alias, a command
 * setting, or an expansion), or null: `GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p`.
 *
 * @example
 * ```ts
 * import { gitEnvironmentProblem } from "./git.ts";
 * gitEnvironmentProblem("GIT_CONFIG_KEY_0", "core.pager", false);
 * // "git's settings in GIT_CONFIG_KEY_0=core.pager may run a command, not read here"
 * ```
 */
export function gitEnvironmentProblem(name: string, value: string, dynamic: boolean): string | null {
  if (!CONFIG_VARIABLES.test(name)) return null;
  const keys = name === "GIT_CONFIG_PARAMETERS"
    ? [...value.matchAll(/'([^']*)'/g)].map((m) => m[1].split("=")[0]) // 'key'='value' or 'key=value'
    : [value];
  const runs = dynamic ||
    keys.some((k) =>
      /^alias\./i.test(k) || COMMAND_SETTINGS.test(k.toLowerCase()) || TRANSPORT_SETTINGS.test(k.toLowerCase())
    );
  return runs ? `git's settings in ${name}=${value} may run a command, not read here` : null;
}
