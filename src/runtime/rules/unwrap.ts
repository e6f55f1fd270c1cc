/**
 * From a command line to the commands a `Bash(...)` rule is checked against.
 *
 * Each simple command (see `shell.ts`) becomes a *unit*: the list of its
 * *stages*, from the command as written to the command it finally runs once
 * the wrappers that only run another command are peeled off (variable
 * assignments, shell keywords, `coproc`, and the wrappers of `wrappers.ts`);
 * `git`'s own options before its subcommand (`git -C dir push`), and an alias
 * those options define for it (`git -c alias.p=push p` runs `git push`; what
 * else git runs: `git.ts`); the runners of `runners.ts` (`npx git push`,
 * `docker compose exec web git push`) and Windows' shells (`cmd /c`). What
 * a program runs by its options or script (`command_options.ts`: `tar
 * --to-command`, `awk 'BEGIN{system("…")}'`), a session (`tmux new '…'`,
 * `at <<< '…'`) or a launcher (`launchers.ts`: `gdb --args`) is read as
 * command lines of its own too; for deny and ask rules, so are the command
 * after the `--` of a program not known to run it and the commands an
 * interpreter's code spells out in strings (`interpreters.ts`). An absolute
 * or relative program path counts by its name (`/usr/bin/git` is `git`); a
 * glob or expansion before the name makes it unknown (`/usr/b?n/git`).
 * Scripts run by other means are read as command lines of their own: `sh -c`,
 * `bash --rcfile F -c` (any shell), `eval`, `env -S`, `flock … -c`, `watch`,
 * `ssh HOST CMD`, the here-document or here-string a shell or `source
 * /dev/stdin` reads, `alias` values, `trap` actions, `find -exec` commands,
 * and substitutions kept as quoted text in assignments. What is only known
 * when it runs (`sh -c "$X"`, `bash <(…)`, `source "$F"`, `echo … | sh`) is
 * reported as a problem: the rules fail closed on it.
 *
 * @module
 */
import { optionRuns, type Runs } from "./command_options.ts";
import { GIT_VALUE_OPTIONS, gitEnvironmentProblem, gitRuns } from "./git.ts";
import {
  evaluationProblem,
  newVariables,
  recordAssignment,
  recordCommand,
  type Variables,
} from "./evaluated_variables.ts";
import {
  codeLines,
  editorShell,
  type InterpreterCode,
  interpreterCode,
  MAPPED_KEYS,
  MAX_CODE_STRINGS,
  optionsVariableCode,
} from "./interpreters.ts";
import { launcherRuns, makeRecipes, makeShellProblem, makeSources } from "./launchers.ts";
import {
  beginReading,
  commandTexts,
  copiedProgram,
  type Copies,
  newWritten,
  recordCopies,
  recordWrites,
  shebangCommand,
  type Written,
  writtenSize,
  writtenText,
  writtenTexts,
} from "./written_scripts.ts";
import { indirectRuns } from "./written_runs.ts";
import { sessionRuns } from "./sessions.ts";
import {
  isKeyword,
  isStdinPath,
  joinWords,
  literalWord,
  MAX_SHELL_DEPTH,
  parseShell,
  type Redirect,
  type ShellWord,
  type SimpleCommand,
  UNKNOWN_ARGUMENTS,
  wordFrom,
} from "./shell.ts";
import { assignmentEnd, isAssignment } from "./shell_assignments.ts";
import { knownReadings, knownValues, mayBeInput, referencedNames } from "./known_values.ts";
import { expandLong } from "./long_options.ts";
import { type CommandInput, escapeRuns } from "./escapes.ts";
import { patchFiles } from "./tools.ts";
import { afterOptionsAt, type Inner, innerOf, isWrapper } from "./wrappers.ts";

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
  /**
   * Other readings of a wrapper's words, for deny and ask rules only (an allow rule never sees them): the command
   * starting at a word its option table took as an option's value or a positional (`faketime -f X git push`, should
   * `-f` be a flag), or right after an option it took as a flag (`strace -U X git push`, should `-U` take a value).
   * Each is peeled as a command of its own. A version of a program whose options differ cannot hide a command.
   */
  alternates: Stage[][];
  /**
   * Strings an interpreter's code holds that may be paths (`open('.env')`): file rules count each as read and
   * written (see `interpreters.ts`).
   */
  codePaths: ShellWord[];
}

/** Compound commands a `coproc NAME` may name (`coproc NAME { git push; }`). */
const COMPOUND = new Set(["{", "(", "if", "while", "until", "for", "case", "select", "[["]);

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

/**
 * The known start of a dynamic command word's program name: its literal text after the last `/`, or nothing when
 * a `/` follows the first expansion (`/usr/b?n/git`, `$D/git`: the name could be anything).
 */
function dynamicNameLiteral(w: ShellWord): string {
  if (w.text.slice(w.literal.length).includes("/")) return "";
  return w.literal.slice(w.literal.lastIndexOf("/") + 1);
}

interface Walk {
  units: Stage[][];
  problems: string[];
  redirects: Redirect[];
  alternates: Stage[][];
  codePaths: ShellWord[];
  /** What the line wrote to files so far (a script it may run next). */
  written: Written;
  /** Programs the line copied or linked under another name so far. */
  copies: Copies;
  /** How many more alternate readings may be peeled (each wrapper level may add some: bounded, failing closed). */
  alternatesLeft: number;
  /** What the line assigns to its variables, and the texts bash evaluates (see `evaluated_variables.ts`). */
  vars: Variables;
  /** The file the command being read takes its input from (`< f`), and its text if the line wrote it. */
  input: CommandInput;
  /**
   * The variables of the whole line, from a reading before this one: a word's known values are looked up there (a
   * value assigned later in a loop, or before a function is called, counts too). Undefined in the first reading.
   */
  lineVars?: Variables;
  /** The variables words were read with, and how many values each had then (-1: unknown); see `noteLookups`. */
  lookups: Map<string, number>;
}

/** The variables a word's known values are looked up in (see `Walk.lineVars`). */
function lineVariables(walk: Walk): Variables {
  return walk.lineVars ?? walk.vars;
}

/** The most alternate readings of wrapper options one line may have before it counts as unreadable. */
const MAX_ALTERNATES = 64;

/** A walk over a command line that has read nothing yet (`written`: what an earlier reading learned it writes). */
function newWalk(written: Written = newWritten(""), lineVars?: Variables): Walk {
  return {
    lineVars,
    lookups: new Map(),
    units: [],
    problems: [],
    redirects: [],
    alternates: [],
    codePaths: [],
    written,
    copies: new Map(),
    alternatesLeft: MAX_ALTERNATES,
    vars: newVariables(),
    input: {},
  };
}

/**
 * Reads the other ways a wrapper's words may run a command (see `CommandUnits.alternates`): `words` is the wrapper's
 * command, `inner` the command its option table says it runs (a suffix of `words`).
 */
function alternateReadings(words: Stage, inner: Stage, heredoc: ShellWord | undefined, depth: number, walk: Walk) {
  const start = words.length - inner.length;
  if (inner.length === 0 || words[start] !== inner[0]) return; // not a suffix (xargs adds its input's words)
  const starts: number[] = [];
  // Words taken as an option's value or a positional: the command, should the option be a flag.
  for (let k = 1; k < start; k++) {
    const w = words[k];
    if (!w.dynamic && !w.text.startsWith("-") && !isAssignment(w.text)) starts.push(k);
  }
  // An option read as a flag that takes a value (or the other way round) in another version of the program.
  const name = programName(words[0]);
  for (let k = 1; k < start; k++) {
    if (!/^-[^-=]|^--[^=]+$/.test(words[k].text) || words[k].dynamic) continue;
    const at = isWrapper(name) && name !== "setarch" ? afterOptionsAt(name, words, k) : k + 2; // env: the next word
    if (at !== start && at < words.length && !starts.includes(at)) starts.push(at);
  }
  for (const k of starts) {
    if (walk.alternatesLeft-- <= 0) {
      walk.problems.push(`more than ${MAX_ALTERNATES} ways to read the options of its wrappers`);
      return;
    }
    const stages = stagesOf(words.slice(k), heredoc, depth, walk);
    if (stages.length > 0) walk.alternates.push(stages);
  }
}

/** How many leading words of a command only introduce it: assignments, keywords, `coproc [NAME]`, `function NAME`. */
function leadingWords(words: Stage): number {
  let i = 0;
  while (i < words.length) {
    const w = words[i];
    if (isAssignment(w.text) && !w.notAssignment) i++; // FOO=1 git push, FOO=$(date) git push, a[0]=1 git push
    else if (w.dynamic) break;
    else if (w.text === "function") i += 2; // function NAME { …; }
    else if (w.text === "coproc") i += COMPOUND.has(words[i + 2]?.text ?? "") && !isKeyword(words[i + 1].text) ? 2 : 1;
    else if (isKeyword(w.text)) i++;
    else break;
  }
  return i;
}

/** Peels the wrappers of one simple command: its stages, and the scripts it runs (read as units of their own). */
function stagesOf(first: Stage, heredoc: ShellWord | undefined, depth: number, walk: Walk): Stage[] {
  const stages: Stage[] = [];
  let words: Stage | null = first;
  let aliases = 0, renamed = 0;
  let settingsFrom = 1;
  while (words !== null && words.length > 0) {
    const i = leadingWords(words);
    storedScripts(words.slice(0, i), true, depth, walk);
    if (i >= words.length) break;
    words = words.slice(i);
    const name = programName(words[0]);
    storedScripts(words.slice(1), DECLARES.has(name) || name === "env", depth, walk);
    recordCommand(walk.vars, name, words);
    const literal = words[0].dynamic ? dynamicNameLiteral(words[0]) : name;
    stages.push([{ ...words[0], text: name, literal }, ...words.slice(1)]);
    if (words[0].dynamic) break;
    const wrote = commandTexts(walk.written, words[0].text);
    if (wrote !== undefined) runWritten(wrote, words, depth, walk);
    readIndirect(name, words, heredoc ?? walk.input.written, depth, walk);
    const copied = copiedProgram(walk.copies, words[0].text);
    if (copied === null) {
      walk.problems.push(`${words[0].text} is a program this line copied from one only known when it runs`);
      break;
    }
    if (copied !== undefined && copied !== name) {
      if (renamed++ >= MAX_GIT_ALIASES) {
        walk.problems.push(`programs copied under other names nested deeper than ${MAX_GIT_ALIASES}`);
        break;
      }
      words = [literalWord(copied), ...words.slice(1)]; // `cp /usr/bin/git gp; ./gp push` runs git
      continue;
    }
    const lower = name.toLowerCase().replace(/\.exe$/, "");
    if (lower !== name && !isKeyword(lower) && !isAssignment(lower)) {
      // A case-insensitive file system (macOS's default) runs git for `GIT push`, Windows for `git.exe push`: deny
      // and ask rules see it so too.
      if (walk.alternatesLeft-- <= 0) walk.problems.push(`more than ${MAX_ALTERNATES} ways to read its commands`);
      else walk.alternates.push(stagesOf([literalWord(lower), ...words.slice(1)], heredoc, depth, walk));
    }
    if (runsScripts(name, words, depth, walk)) break;
    if (name === "eval") {
      readScript(joinWords(words.slice(1)), depth, walk);
      break;
    }
    const read = knownAlternates(words, heredoc, depth, walk);
    const known = (w: ShellWord) => read && knownValues(w, lineVariables(walk)) !== null;
    const expansions = { known, mayBeInput: (w: ShellWord, fed: boolean) => mayBeInput(w, walk.vars, fed) };
    const runs = optionRuns(name, words, heredoc, expansions) ?? sessionRuns(name, words, heredoc ?? null) ??
      launcherRuns(name, words) ?? escapeRuns(name, words, { ...walk.input, heredoc });
    if (runs !== null) readRuns(runs, depth, walk);
    const code = interpreterCode(name, words);
    if (code !== null) readCode(name, code, heredoc, depth, walk);
    if (name === "make" || name === "gmake") readMake(words, heredoc, depth, walk);
    if (name === "apply_patch" || name === "applypatch") readPatch(words, heredoc, walk);
    if (name === "git") {
      const bare = gitSubcommand(words);
      const sub = (bare ?? words)[1];
      if (sub?.dynamic && !known(sub)) {
        // `git $X`, `git "$@"`, `xargs git`: git's options (`-c alias.a=!cmd`) or subcommand, unknown until it runs.
        walk.problems.push(
          sub === UNKNOWN_ARGUMENTS
            ? "git's options and subcommand come from arguments only known when it runs"
            : `git's ${sub.literal.startsWith("-") ? "option" : "subcommand"} ${sub.text} is only known when it runs`,
        );
      }
      if (bare !== null) {
        stages.push(bare);
        // An option of a git version noema does not know may take the next word (`git --new-opt X push`).
        const at = words.length - bare.length + 1;
        if (/^--?[^-=][^=]*$/.test(words[at - 1].text) && bare.length > 2) {
          walk.alternates.push([[bare[0], ...bare.slice(2)]]);
        }
      }
      const plumbing = (bare ?? words)[1];
      if (plumbing !== undefined && PUSH_PLUMBING.has(plumbing.text)) {
        // `git send-pack REMOTE REF` pushes as `git push` does: deny and ask rules on `git push` hold against it.
        walk.alternates.push([[literalWord("git"), literalWord("push"), ...(bare ?? words).slice(2)]]);
      }
      const expanded = readGit(words, bare, settingsFrom, depth, walk);
      if (expanded === null) break;
      if (aliases++ >= MAX_GIT_ALIASES) {
        walk.problems.push(`git aliases nested deeper than ${MAX_GIT_ALIASES}`);
        break;
      }
      settingsFrom = words.length - (bare ?? words).length + 1; // the options read: the alias keeps them
      words = expanded; // git runs the alias's value: read it as git does (it may be another alias)
      continue;
    }
    const inner = innerOf(name, words);
    afterDashDash(words, inner, depth, walk);
    if (inner === null) break;
    if (inner.kind === "command") {
      alternateReadings(words, inner.words, heredoc, depth, walk);
      words = inner.words;
      continue;
    }
    runInner(name, inner, heredoc, depth, walk);
    break;
  }
  return stages;
}

/**
 * A command after `--` that the program is not known to run (`mise exec node@20 -- git push`, `aws-vault exec P
 * --duration 1h -- git push`, a runner noema does not know): deny and ask rules read it as one, an allow rule never.
 * Words after `--` that start with `-`, or are only known when the line runs, are taken for arguments.
 */
function afterDashDash(words: Stage, inner: Inner | null, depth: number, walk: Walk): void {
  const k = words.findIndex((w, i) => i > 0 && w.text === "--" && !w.dynamic);
  const next = k === -1 ? undefined : words[k + 1];
  if (next === undefined || next.dynamic || next.text.startsWith("-")) return;
  if (inner?.kind === "command" && inner.words[0] === next) return;
  if (walk.alternatesLeft-- <= 0) {
    return void walk.problems.push(`more than ${MAX_ALTERNATES} ways to read its commands`);
  }
  const stages = stagesOf(words.slice(k + 1), undefined, depth, walk);
  if (stages.length > 0) walk.alternates.push(stages);
}

/** A string in code that may name a file: one word, not too long. */
const PATH_LIKE = /^[^\s"'`]{1,1024}$/;

/**
 * Reads the commands an interpreter's code spells out in string literals (see `interpreters.ts`), for deny and ask
 * rules: each literal's commands, read as a line of its own whose unreadable parts are no problem (a literal is
 * any text) and whose commands must start with a known name; the literals that may be paths, for file rules; an
 * editor's `!` commands as scripts. Code only known when it runs (`python -c "$X"`, a program from a pipe) fails
 * closed.
 */
function readCode(name: string, code: InterpreterCode, heredoc: ShellWord | undefined, depth: number, walk: Walk) {
  for (const script of code.shell) readScript(script, depth, walk);
  walk.problems.push(...code.problems ?? []);
  const texts = [...code.code];
  if (code.file?.dynamic && mayBeInput(code.file, walk.vars, heredoc !== undefined)) {
    walk.problems.push(`${name}'s program file ${code.file.text.slice(0, 80)} is only known when it runs (its input?)`);
  }
  const wrote = code.file === undefined || code.file.dynamic ? undefined : writtenTexts(walk.written, code.file.text);
  if (wrote !== undefined) texts.push(...wrote); // a program file this line wrote
  const input = heredoc ?? (code.editorInput ? walk.input.written : undefined);
  if (code.editorInput && input !== undefined && !input.dynamic) {
    // Each line an editor command: `!CMD` runs a shell command, the others' strings are read as code's.
    const read = (code.readInput ?? editorShell)(input.text);
    for (const shell of read.shell) readScript(literalWord(shell), depth, walk);
    walk.problems.push(...read.problems);
    const flags = code.editorFlags ?? {};
    if ((flags.maps || read.maps) && (flags.typed || read.typed)) walk.problems.push(MAPPED_KEYS);
    texts.push(...input.text.split("\n").map(literalWord));
  } else if (code.fromInput && input !== undefined) texts.push(input);
  else if (code.editorInput && walk.input.file !== undefined && !walk.input.file.dynamic) {
    // Commands from a file the line did not write: not read, like a script file (docs/rules.md).
  } else if (code.fromInput) walk.problems.push(`${name} reads its program from its input, unknown until it runs`);
  for (const text of texts) {
    if (text.dynamic) {
      walk.problems.push(`${name} runs code only known when it runs: ${text.text}`);
      continue;
    }
    const lines = codeLines(text.text, code);
    if (lines === null) {
      walk.problems.push(`${name}'s code holds more than ${MAX_CODE_STRINGS} strings`);
      continue;
    }
    for (const line of lines) {
      if (PATH_LIKE.test(line)) walk.codePaths.push(literalWord(line));
      const sub = newWalk();
      collect(line, depth + 1, sub);
      const units = [...sub.units, ...sub.alternates].filter((unit) => !unit[0]?.[0]?.dynamic);
      walk.alternates.push(...units);
      walk.codePaths.push(...sub.codePaths); // an interpreter's code run by a string of this code
    }
  }
}

/**
 * Reads what make runs: the recipes of its `--eval` texts, of a makefile from its input (a here-document; from a pipe
 * it fails closed) and of a makefile this line wrote (its `-f` file or its default names). A makefile the line did
 * not write is not read (docs/rules.md).
 */
/**
 * Codex's `apply_patch` run through the shell, its patch an argument or a here-document (Codex applies it itself):
 * the files its headers name count as read and written.
 */
function readPatch(words: Stage, heredoc: ShellWord | undefined, walk: Walk): void {
  for (const w of [...words.slice(1), ...(heredoc ? [heredoc] : [])]) {
    for (const file of patchFiles(w.dynamic ? w.literal : w.text)) walk.codePaths.push(literalWord(file));
  }
}

function readMake(words: Stage, heredoc: ShellWord | undefined, depth: number, walk: Walk): void {
  const { evals, files } = makeSources(words);
  const texts: ShellWord[] = [...evals];
  // Its variables on the command line (`make SHELL=rm .SHELLFLAGS=x`), in --eval texts and makefiles read below.
  for (const w of words.slice(1)) {
    if (w.dynamic && /^(SHELL|\.SHELLFLAGS|MAKESHELL|MAKEFLAGS)[:+?!]*=/.test(w.literal)) {
      walk.problems.push(`make's ${w.text.slice(0, 60)} is only known when it runs`);
    }
  }
  const assigned = makeShellProblem(
    words.slice(1).filter((w) => !w.dynamic && isAssignment(w.text)).map((w) => w.text).join("\n"),
  );
  if (assigned !== null) walk.problems.push(assigned);
  for (const f of files) {
    if (f.dynamic) walk.problems.push(`make reads the makefile ${f.text}, unknown until it runs`);
    else if (isStdinPath(f.text)) {
      if (heredoc !== undefined) texts.push(heredoc);
      else walk.problems.push("make reads its makefile from its input, unknown until it runs");
    } else {
      const wrote = writtenTexts(walk.written, f.text);
      if (wrote !== undefined) texts.push(...wrote);
    }
  }
  for (const text of texts) {
    if (text.dynamic) readScript(text, depth, walk); // a problem: its text is unknown
    else {
      const shell = makeShellProblem(text.text);
      if (shell !== null) walk.problems.push(shell);
      for (const recipe of makeRecipes(text.text)) readScript(literalWord(recipe), depth, walk);
    }
  }
}

/**
 * Reads a file this line wrote and runs as a program (`./p.sh x`, each text it may hold): one without a `#!` line
 * as the shell's script; one with it as the command the kernel makes of it, `INTERPRETER [ARGUMENT] ./p.sh x` (a
 * shell or an interpreter then reads the file as its script; `#!/bin/rm` runs rm), and the same with the argument
 * split at spaces as macOS does, for deny and ask rules. A text only known when it runs fails closed.
 */
function runWritten(texts: ShellWord[], run: Stage, depth: number, walk: Walk): void {
  if (depth >= MAX_SHELL_DEPTH) return void walk.problems.push(`scripts nested deeper than ${MAX_SHELL_DEPTH}`);
  for (const text of texts) {
    const command = text.dynamic ? null : shebangCommand(text.text, run);
    if (command === null) {
      readScript(text, depth, walk);
      continue;
    }
    const stages = stagesOf(command.words, undefined, depth + 1, walk);
    if (stages.length > 0) walk.units.push(stages);
    if (command.split === null || walk.alternatesLeft-- <= 0) continue;
    const split = stagesOf(command.split, undefined, depth + 1, walk);
    if (split.length > 0) walk.alternates.push(split);
  }
}

/**
 * Reads what a program may run of the files this line wrote without naming them as its script (`written_runs.ts`):
 * the `BASH_ENV` a shell runs, the modules an interpreter may import, git's hooks; or fails closed.
 */
function readIndirect(name: string, words: Stage, input: ShellWord | undefined, depth: number, walk: Walk): void {
  const runs = indirectRuns(walk.written, name, words, input);
  walk.problems.push(...runs.problems);
  for (const script of runs.scripts) readScript(script, depth, walk);
  for (const { path, texts } of runs.programs) runWritten(texts, [literalWord(path)], depth, walk);
  for (const { program, texts } of runs.code) {
    const code = interpreterCode(program, [literalWord(program)]);
    for (const text of texts) if (code !== null) readCode(program, code, text, depth, walk);
  }
}

/** Builtins that run a command given to an option, with arguments of their own. */
const CALLBACKS = new Set(["mapfile", "readarray", "compgen", "complete"]);
/** Reads a script that runs with more arguments after it (an alias, a callback): its commands' tails are unknown. */
function readPrefix(script: ShellWord, depth: number, walk: Walk): void {
  const before = walk.units.length;
  readScript(script, depth, walk);
  for (const unit of walk.units.slice(before)) unit.push([...unit.at(-1)!, UNKNOWN_ARGUMENTS]);
}

/** Builtins whose arguments are assignments. */
const DECLARES = new Set(["export", "declare", "typeset", "local", "readonly"]);

/** Variables whose value a program runs as a command (`GIT_PAGER='…' git log`, `PROMPT_COMMAND`). */
const COMMAND_VARS =
  /^((GIT_)?(PAGER|EDITOR|SEQUENCE_EDITOR)|VISUAL|MANPAGER|BROWSER|LESSOPEN|LESSCLOSE|GIT_EXTERNAL_DIFF|PROMPT_COMMAND|[A-Z_]*_COMMAND|[A-Z_]*ASKPASS)$/;
/** An array subscript holding a substitution: bash evaluates it wherever the name is used (`let`, `$((X))`). */
const SUBSCRIPT = /\[[^\]]*(\$\(|`)/;

/**
 * Commands kept as text that run later: an assignment to a variable a program runs (`GIT_PAGER='git push' git
 * log`), a substitution kept as quoted text in a value (`X='a[$(git push)]'; echo $((X))`, `PS4='$(…)'`) or in an
 * array subscript given to a builtin (`let 'a[$(git push)]'`, `printf -v 'a[$(…)]'`); `BASH_ENV`/`ENV` from an
 * expansion (`BASH_ENV=<(…) bash -c :` sources it).
 */
function storedScripts(words: Stage, assignments: boolean, depth: number, walk: Walk): void {
  for (const w of words) {
    // Only the quoted text: a substitution the shell runs at once is read already.
    const text = w.dynamic ? w.literal : w.text;
    const eq = assignments ? assignmentEnd(text) : -1;
    const name = eq > 0 ? text.slice(0, eq).replace(/\+$/, "") : "";
    if (assignments && isAssignment(w.text)) recordAssigned(w, depth, walk);
    const git = eq > 0 ? gitEnvironmentProblem(name, w.text.slice(eq + 1), w.dynamic) : null;
    const options = eq > 0 ? optionsVariableCode(name, wordFrom(w, eq + 1)) : null;
    if (/^BASH_FUNC_[^=]*=/.test(w.text)) {
      // env 'BASH_FUNC_f%%=() { …; }' bash -c f: a bash started with it defines f from the value, and runs it.
      walk.problems.push(`${w.text.slice(0, w.text.indexOf("="))} gives a bash a function from its environment`);
    } else if (options !== null) readCode(name, options, undefined, depth, walk); // PERL5OPT='-M…', NODE_OPTIONS
    else if (git !== null) walk.problems.push(git);
    else if (COMMAND_VARS.test(name)) {
      readScript({ ...w, text: w.text.slice(eq + 1), literal: text.slice(eq + 1) }, depth, walk);
    } else if (name === "TAR_OPTIONS") {
      // tar reads its options from TAR_OPTIONS first (`TAR_OPTIONS='--to-command=…' tar -xf a.tar`).
      const value = wordFrom(w, eq + 1);
      if (value.dynamic) walk.problems.push(`TAR_OPTIONS gives tar options only known when it runs: ${value.text}`);
      else {
        const parsed = parseShell(value.text, depth + 1);
        const runs = optionRuns("tar", [literalWord("tar"), ...(parsed.commands[0]?.words ?? [])]);
        if (parsed.problem !== null) walk.problems.push(`TAR_OPTIONS ${parsed.problem}`);
        if (runs !== null) readRuns(runs, depth, walk);
      }
    } else if (/^(MAKEFLAGS|MFLAGS|GNUMAKEFLAGS)$/.test(name) && /SHELL|\$|`/.test(w.text.slice(eq + 1))) {
      walk.problems.push(`${name} may give make a SHELL or .SHELLFLAGS to run its recipes with, not read here`);
    } else if ((name === "BASH_ENV" || name === "ENV") && w.dynamic) {
      walk.problems.push(`${name} comes from ${w.text.slice(eq + 1)}: a shell runs it, unknown until it runs`);
    } else if (eq > 0 ? /\$\(|`/.test(text.slice(eq + 1)) : SUBSCRIPT.test(text)) {
      collect(`: ${text.slice(eq + 1)}`, depth + 1, walk);
    }
  }
}

/**
 * Reads a command again with the values this line gave the variables its words expand (`X='-c alias.a=!cmd a'; git
 * $X`; see `known_values.ts`), as alternate readings for deny and ask rules.
 */
function knownAlternates(words: Stage, heredoc: ShellWord | undefined, depth: number, walk: Walk): boolean {
  const vars = lineVariables(walk);
  const { readings, tooMany } = knownReadings(words, vars, MAX_KNOWN_READINGS);
  if (readings !== null || tooMany) noteLookups(words, vars, walk);
  // Too many to read: its words count as unknown to the readers of options and programs (which then fail closed
  // where that matters: `git $X`), not as a problem of every command (`echo "$f"`).
  if (tooMany) return false;
  for (const reading of readings ?? []) {
    if (walk.alternatesLeft-- <= 0) {
      walk.problems.push(`more than ${MAX_ALTERNATES} ways to read its commands`);
      return true;
    }
    const stages = stagesOf(reading, heredoc, depth, walk);
    if (stages.length > 0) walk.alternates.push(stages);
  }
  return true;
}

/**
 * Notes the variables `words` were read with, and how many values each had then: when the whole line gives one more
 * (a loop, a function called later), the line is read again with them all (see `commandUnits`).
 */
function noteLookups(words: readonly ShellWord[], vars: Variables, walk: Walk): void {
  for (const w of words) {
    if (!w.dynamic) continue;
    for (const name of referencedNames(w.text)) {
      if (!walk.lookups.has(name)) {
        walk.lookups.set(name, vars.unknown.has(name) ? -1 : vars.known.get(name)?.length ?? 0);
      }
    }
  }
}

/** Whether the whole line's variables give a variable read with its values more than it had then. */
function lookupsChanged(walk: Walk): boolean {
  for (const [name, count] of walk.lookups) {
    const now = walk.vars.unknown.has(name) ? -1 : walk.vars.known.get(name)?.length ?? 0;
    if (now !== count) return true;
  }
  return false;
}

/** The most readings of one command with its variables' values (see {@link knownAlternates}). */
const MAX_KNOWN_READINGS = 8;

/**
 * Records an assignment word's value for `evaluated_variables.ts` (its array subscript is arithmetic); a value `+=`
 * joined that holds a substitution is read as a literal's is (`A='a[$'; A+='(rm x)]'` holds `a[$(rm x)]`).
 */
function recordAssigned(w: ShellWord, depth: number, walk: Walk): void {
  const eq = assignmentEnd(w.text);
  const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(w.text)![0];
  const bracket = w.text.slice(name.length).startsWith("[");
  const subscript = bracket ? w.text.slice(name.length + 1, w.text.lastIndexOf("]", eq)) : undefined;
  const joined = recordAssignment(walk.vars, name, wordFrom(w, eq + 1), subscript, w.text[eq - 1] === "+");
  for (const value of joined) if (/\$\(|`/.test(value)) collect(`: ${value}`, depth + 1, walk);
}

/** Reads what a wrapper runs other than as words: a script, its input, a script file; or says why it cannot. */
function runInner(
  name: string,
  inner: Exclude<Inner, { kind: "command" }>,
  heredoc: ShellWord | undefined,
  depth: number,
  walk: Walk,
): void {
  if (inner.kind === "script") return readScript(inner.script, depth, walk);
  if (inner.kind === "unknown") return void walk.problems.push(inner.why);
  if (inner.kind === "file") {
    const f = inner.file;
    if (f.dynamic) {
      return void walk.problems.push(`the script ${name} runs comes from ${f.text}, unknown until it runs`);
    }
    if (/^\/(dev|proc\/[^/]+)\/fd\/[1-9]/.test(f.text)) {
      return void walk.problems.push(`the script ${name} runs comes from ${f.text}, unknown until it runs`);
    }
    const wrote = writtenTexts(walk.written, f.text);
    if (wrote !== undefined) return wrote.forEach((text) => readScript(text, depth, walk)); // a script this line wrote
    if (!isStdinPath(f.text)) return; // a script file: not read (see docs/rules.md)
  }
  // A here-document or here-string is read; `echo 'git push' | sh`, `curl … | bash`: unknown here.
  if (heredoc !== undefined) readScript(heredoc, depth, walk);
  else walk.problems.push(`${name} reads a script from its input, unknown until it runs`);
}

/** `git -C dir -c k=v push` as `git push` (its global options removed), or null when it has none. */
function gitSubcommand(words: Stage): Stage | null {
  let i = 1;
  while (i < words.length && words[i].text.startsWith("-") && !words[i].dynamic) {
    i += GIT_VALUE_OPTIONS.test(words[i].text) ? 2 : 1;
  }
  return i > 1 && i < words.length ? [{ ...words[0], text: "git", literal: "git" }, ...words.slice(i)] : null;
}

/** git's plumbing that pushes (what `git push` runs), read as `git push` by deny and ask rules. */
const PUSH_PLUMBING = new Set(["send-pack", "http-push"]);

/** Aliases of aliases followed in one git command (git itself refuses a loop). */
const MAX_GIT_ALIASES = 8;

/** Reads what a git command runs besides git (see `git.ts`); the command an alias stands for, or null. */
function readGit(words: Stage, bare: Stage | null, settingsFrom: number, depth: number, walk: Walk): Stage | null {
  const runs = gitRuns(words, bare ?? words, settingsFrom);
  if (runs === null) return null;
  readRuns(runs, depth, walk);
  return runs.expanded;
}

/** Reads the commands a program runs besides itself (`git.ts`, `command_options.ts`, `sessions.ts`). */
function readRuns(runs: Runs, depth: number, walk: Walk): void {
  walk.problems.push(...runs.problems);
  for (const { script, args } of runs.scripts) (args ? readPrefix : readScript)(script, depth, walk);
  for (const command of runs.commands) {
    const stages = stagesOf(command, undefined, depth, walk);
    if (stages.length > 0) walk.units.push(stages);
  }
}

/** The long options of `su`, `runuser` and `script` whose value is a shell command. */
const SCRIPT_OPTIONS = ["--command", "--session-command"];

/** The shell's reserved words (an alias may stand for one: `alias k=case`). */
const RESERVED = new Set([
  "case",
  "esac",
  "in",
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "for",
  "select",
  "while",
  "until",
  "do",
  "done",
  "{",
  "}",
  "!",
  "[[",
  "]]",
  "function",
  "time",
  "coproc",
]);

/** Commands that run text given to them later or elsewhere: `alias`, `trap`, `find -exec`. True when it was one. */
function runsScripts(name: string, words: Stage, depth: number, walk: Walk): boolean {
  if (name === "alias") {
    // alias p='git push' runs its value wherever p is used, with the arguments p is given there.
    for (const w of words.slice(1)) {
      const eq = w.text.indexOf("=");
      if (eq <= 0) continue;
      // A value that starts with a reserved word (`alias k=case`) changes how the rest of the line parses, in ways
      // this reader does not follow (`k x in x) rm x;; esac` inside a substitution): unreadable.
      const reserved = (w.text.slice(eq + 1).match(/[^\s;&|()<>'"\\]+/g) ?? []).find((t) => RESERVED.has(t));
      if (reserved !== undefined) {
        walk.problems.push(`an alias whose value holds the reserved word ${reserved}`);
        continue;
      }
      readPrefix({ ...w, text: w.text.slice(eq + 1), literal: w.literal.slice(eq + 1) }, depth, walk);
    }
    return true;
  }
  if (name === "hash") {
    // hash -p /usr/bin/git g: g runs git from then on, with the arguments g is given.
    const p = words.findIndex((w, k) => k > 0 && w.text === "-p");
    if (p !== -1 && words[p + 1] !== undefined) readPrefix(words[p + 1], depth, walk);
    return true;
  }
  if (name === "enable" && words.some((w) => /^-[a-z]*f/.test(w.text))) {
    walk.problems.push("enable -f loads a builtin from a file, unknown until it runs");
    return true;
  }
  if (name === "parallel") {
    walk.problems.push("parallel builds the commands it runs from its arguments and input, unknown until it runs");
    return true;
  }
  if (CALLBACKS.has(name)) {
    // mapfile -C CALLBACK, compgen -C COMMAND: run with arguments of their own.
    const c = words.findIndex((w, k) => k > 0 && /^-[A-Za-z]*C/.test(w.text));
    if (c !== -1) {
      const inline = words[c].text.slice(words[c].text.indexOf("C") + 1);
      readPrefix(inline !== "" ? literalWord(inline) : words[c + 1] ?? literalWord(""), depth, walk);
    }
    return true;
  }
  if (name === "su" || name === "runuser" || name === "script" || name === "sg") {
    // su -c 'git push' user, script -qc 'git push' /dev/null, -c'git push', --command=…: a script.
    // Up to `--`, or runuser -u USER's command: a -c after them is the command's own.
    const end = name === "runuser" && words.some((w) => /^(-u|--user)$/.test(w.text))
      ? afterOptionsAt(name, words)
      : words.length;
    for (let k = 1; k < end && words[k].text !== "--"; k++) {
      // `--command`, su's and runuser's `--session-command`, abbreviated or not (`--comm=…`, `--session=…`).
      const t = words[k].text, eq = t.indexOf("=");
      const long = expandLong(t, SCRIPT_OPTIONS) !== null;
      const m = long ? null : /^-[abd-z]*c(.*)$/s.exec(t);
      if (!long && !m) continue;
      const inline = long ? (eq === -1 ? null : t.slice(eq + 1)) : m![1] !== "" ? m![1] : null;
      readScript(
        inline !== null ? wordFrom(words[k], t.length - inline.length) : words[k + 1] ?? literalWord(""),
        depth,
        walk,
      );
      return true;
    }
    // sg GROUP COMMAND runs it with sh -c; runuser -u USER COMMAND… runs it as words (peeled as a wrapper).
    if (name === "sg" && words.length > 2) {
      readScript(joinWords(words.slice(words[1].text === "-" ? 3 : 2)), depth, walk);
    }
    return name !== "runuser";
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
      // `{}` is a path find found: unknown (`find push -exec git {} \;` runs `git push`).
      const exec = words.slice(i + 1, end).map((w) =>
        w.text.includes("{}") ? { text: w.text, dynamic: true, literal: w.literal.split("{}")[0] } : w
      );
      const stages = stagesOf(exec, undefined, depth, walk);
      if (stages.length > 0) walk.units.push(stages);
      i = end;
    }
  }
  return false;
}

/** Reads a script run by a command (`sh -c`, `eval`…) as a command line of its own. */
function readScript(script: ShellWord, depth: number, walk: Walk): void {
  if (script.dynamic) {
    walk.problems.push(`a script whose text is not known until it runs: ${script.text}`);
    return;
  }
  collect(script.text, depth + 1, walk);
}

/**
 * Reads a command line into `walk`. `subshell`: the text of a `(( … ))` read as the subshells dash makes of it; a
 * text dash cannot parse is a syntax error there that runs nothing, so its problem is not one (bash reads it as
 * arithmetic).
 */
function collect(text: string, depth: number, walk: Walk, subshell = false): void {
  if (depth > MAX_SHELL_DEPTH) {
    walk.problems.push(`scripts nested deeper than ${MAX_SHELL_DEPTH}`);
    return;
  }
  const parsed = parseShell(text, depth);
  if (parsed.problem !== null && !subshell) walk.problems.push(parsed.problem);
  walk.vars.arithmetic.push(...parsed.arithmetic);
  walk.vars.parameters.push(...parsed.parameters);
  for (const p of parsed.parameters) {
    const assigned = /^([A-Za-z_][A-Za-z0-9_]*):?=/.exec(p); // `${X:=v}`, `${X=v}` assign X (its value not read here)
    if (assigned) walk.vars.unknown.add(assigned[1]);
  }
  for (const sub of parsed.subshells) collect(sub, depth + 1, walk, true);
  for (const c of parsed.commands) {
    if (c.redirects) walk.redirects.push(...c.redirects);
    walk.input = inputOf(c, walk);
    const stages = stagesOf(c.words, c.heredoc, depth, walk);
    walk.input = {};
    if (stages.length > 0) walk.units.push(stages);
    recordWrites(c, walk.written, stages.at(-1));
    recordCopies(c.words, walk.written, walk.copies);
  }
}

/** The file a command reads on its input (its last `<`), and that file's text when the line wrote it. */
function inputOf(c: SimpleCommand, walk: Walk): CommandInput {
  const file = c.redirects?.findLast((r) => r.op === "<" || r.op === "<>")?.target;
  if (file === undefined) return {};
  return { file, written: file.dynamic ? undefined : writtenText(walk.written, file.text) };
}

/** The most times a line is read again to learn what the files it writes hold. */
const MAX_READINGS = 4;

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
  const written = newWritten(text);
  let walk = newWalk(written);
  let lineVars: Variables | undefined;
  // Read again while a reading learns of more writes: a loop, a function or a pipeline may run a file before the
  // command that writes it is read (`for …; do sh s; echo … > s; done`); and once more with the whole line's
  // variables when a word was read with a variable's values (`X=a; for …; do git $X; X=b; done` runs both).
  for (let reading = 1;; reading++) {
    const before = writtenSize(written);
    beginReading(written);
    walk = newWalk(written, lineVars);
    collect(text, 0, walk);
    const again = lineVars === undefined && lookupsChanged(walk);
    lineVars = walk.vars;
    if (writtenSize(written) === before && !again) break;
    if (reading >= MAX_READINGS) {
      walk.problems.push(`files this line writes that write others, more than ${MAX_READINGS} deep`);
      break;
    }
  }
  const evaluated = evaluationProblem(walk.vars);
  if (evaluated !== null) walk.problems.push(evaluated);
  return {
    units: walk.units,
    problem: walk.problems[0] ?? null,
    redirects: walk.redirects,
    alternates: walk.alternates,
    codePaths: walk.codePaths,
  };
}
