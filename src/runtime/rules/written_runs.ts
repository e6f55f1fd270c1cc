/**
 * Files a line writes that a program it runs may run without naming them as its script: a file `BASH_ENV` or
 * `ENV` names (a shell started with it runs it), the modules Python and Node may import (`python3 -m p`, `import
 * json` finding a `json.py` the line wrote, `node -r ./p.js`, `require("./p")`, a `package.json`'s scripts), git's
 * hooks (under `.git/hooks` or a `core.hooksPath`) and settings, and the command files of editors and debuggers
 * (`vim -S f`, `gdb -x f`, a `.vimrc` or `.gdbinit`). `unwrap.ts` reads what they hold as the program would, or fails
 * closed: a text only known when it runs, or a program whose command language is not read here.
 *
 * @module
 */
import { posix } from "node:path";
import { exCommands } from "./ex_commands.ts";
import { literalWord, type ShellWord, wordFrom } from "./shell.ts";
import { VIM_NAMES, vimArgs } from "./vim_args.ts";
import { scriptKey, type Written, writtenPaths, writtenTexts } from "./written_scripts.ts";

/** What a program may run of the files the line wrote. */
export interface IndirectRuns {
  /** Texts a shell runs as a script (`BASH_ENV`). */
  scripts: ShellWord[];
  /** Files run as programs, by their `#!` line (git's hooks). */
  programs: { path: string; texts: ShellWord[] }[];
  /** Code an interpreter runs (the modules it may import), read as `program`'s. */
  code: { program: string; texts: ShellWord[] }[];
  /** Why what it runs cannot be read. */
  problems: string[];
}

/** Interpreters that may import a module the line wrote, by the file names of their modules. */
const MODULES: { programs: RegExp; files: RegExp; reader: string }[] = [
  {
    programs: /^(python[0-9.]*|pypy[0-9.]*|pytest|py\.test|pip[0-9.]*)$/,
    files: /\.(py|pth)$|(^|\/)(sitecustomize|usercustomize)\.py$/,
    reader: "python3",
  },
  {
    programs: /^(node|nodejs|bun|deno|tsx|ts-node|npx|npm|pnpm|yarn|jest|vitest|mocha)$/,
    files: /\.[cm]?[jt]sx?$|(^|\/)package\.json$/,
    reader: "node",
  },
  { programs: /^(ruby[0-9.]*|irb|rake|bundle|gem)$/, files: /\.rb$/, reader: "ruby" },
  { programs: /^perl[0-9.]*$/, files: /\.p[lm]$/, reader: "perl" },
];

/**
 * Programs that run commands from files named by their options (`options`: the option, its value the next word, or
 * after `=`, or attached to a short one) or by commands they are given or read (`commands`: the file after it), or
 * from start-up files, in their own language.
 */
const COMMAND_FILES: { programs: RegExp; startup: RegExp; options?: RegExp; commands?: RegExp }[] = [
  { programs: VIM_NAMES, startup: /(^|\/)[._]?(g?vimrc|exrc)$|\.vim$/ },
  {
    programs: /^c?gdb$/,
    startup: /(^|\/)\.gdbinit$/,
    options: /^(-x|--?command|-ix|--?init-command)$/,
    commands: /(?:^|\n)\s*so(?:u(?:r(?:c(?:e)?)?)?)?\s+(?:-[sv]\s+)*(\S+)/g,
  },
  {
    programs: /^lldb$/,
    startup: /(^|\/)\.lldbinit$/,
    options: /^(-s|--source|-S|--source-before-file)$/,
    commands: /command\s+source\s+(?:-\S+\s+)*(\S+)/g,
  },
  { programs: /^sqlite3$/, startup: /(^|\/)\.sqliterc$/, options: /^--?init$/, commands: /(?:^|\n)\s*\.read\s+(\S+)/g },
  {
    programs: /^psql$/,
    startup: /(^|\/)\.psqlrc$/,
    options: /^(-f|--file)$/,
    commands: /\\(?:ir?|include(?:_relative)?)\s+(\S+)/g,
  },
  {
    programs: /^(mysql|mariadb)$/,
    startup: /(^|\/)\.my\.cnf$/,
    options: /^(--defaults-file|--defaults-extra-file)$/,
    commands: /(?:^|[\n;])\s*(?:source|\\\.)\s+(\S+)/gi,
  },
];

/** git's hooks (any folder named `hooks`: `.git/hooks`, a `GIT_DIR`'s, a `core.hooksPath` of that name). */
const HOOKS = /(^|\/)hooks\/[^/]+$/;
/**
 * git's settings files: aliases, `core.pager`, filters and more run commands. Attributes files (`.gitattributes`) are
 * not: they only name filters and drivers, whose commands come from settings.
 */
const GIT_SETTINGS = /(^|\/)(\.git\/config|\.gitconfig|git\/config)$/;

/**
 * The files a program reads commands from, by its options and commands (see {@link COMMAND_FILES}; vim's by
 * `vim_args.ts` and its `source FILE` commands). A file it edits or opens (`vim f`, `sqlite3 db`) is none.
 */
function commandFiles(
  files: (typeof COMMAND_FILES)[number],
  words: readonly ShellWord[],
  input: ShellWord | undefined,
): ShellWord[] {
  if (files.programs === VIM_NAMES) {
    const args = vimArgs(words);
    const sourced = args.commands.flatMap((c) => c.word.dynamic ? [] : exCommands(c.word.text).sourced ?? []);
    const read = input === undefined || input.dynamic || !args.ex ? [] : exCommands(input.text).sourced ?? [];
    return [...args.commandFiles, ...[...sourced, ...read].map(literalWord)];
  }
  const out: ShellWord[] = [];
  for (let k = 1; k < words.length; k++) {
    const w = words[k], t = w.text, eq = t.indexOf("=");
    if (files.options?.test(t) && words[k + 1] !== undefined) out.push(words[++k]);
    else if (eq > 0 && files.options?.test(t.slice(0, eq))) out.push(wordFrom(w, eq + 1));
    else {
      const short = /^-[A-Za-z]/.test(t) && t.length > 2 && !t.startsWith("--") ? t.slice(0, 2) : null;
      if (short !== null && files.options?.test(short)) out.push(wordFrom(w, 2));
    }
  }
  for (const text of [...words.slice(1), ...(input === undefined ? [] : [input])]) {
    if (files.commands === undefined) break;
    if (text.dynamic) continue;
    for (const m of text.text.matchAll(files.commands)) out.push(literalWord(m[1].replace(/^["']|["'];?$/g, "")));
  }
  return out;
}

/** Whether `file` (a command file named on the line) may be `path` (a file the line wrote): their names are one. */
function mayBe(file: ShellWord, path: string): boolean {
  if (file.dynamic) return true;
  return posix.basename(scriptKey(file.text)) === posix.basename(scriptKey(path));
}

/** Reads each file once per reading of the line: whether `key` is new. */
function once(written: Written, key: string): boolean {
  if (written.done.has(key)) return false;
  written.done.add(key);
  return true;
}

/** git's hooks and settings the line wrote, when it runs git. */
function gitRuns(written: Written, out: IndirectRuns): void {
  if (written.hooksDirs.has("")) {
    out.problems.push("git runs hooks from a folder only known when it runs (core.hooksPath), on a line that writes");
  }
  const paths = writtenPaths(written, /./).filter((p) =>
    HOOKS.test(p) || [...written.hooksDirs].some((d) => d !== "" && p.startsWith(d + "/"))
  );
  for (const path of paths) {
    if (once(written, `hook:${path}`)) out.programs.push({ path, texts: writtenTexts(written, path) ?? [] });
  }
  for (const path of writtenPaths(written, GIT_SETTINGS)) {
    out.problems.push(`git reads settings from ${path}, which this line writes (they may run commands)`);
  }
}

/**
 * What a program the line runs may run of the files the line wrote, besides its named script (see the module doc).
 *
 * @example
 * ```ts
 * import { indirectRuns } from "./written_runs.ts";
 * import { newWritten } from "./written_scripts.ts";
 * const written = newWritten("");
 * written.writes.set("p", { path: "p.py", text: "import os\n" });
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * indirectRuns(written, "python3", ["python3", "-m", "p"].map(w)).code[0].texts[0].text; // "import os\n"
 * ```
 */
export function indirectRuns(
  written: Written,
  name: string,
  words: readonly ShellWord[],
  input?: ShellWord,
): IndirectRuns {
  const out: IndirectRuns = { scripts: [], programs: [], code: [], problems: [] };
  if (written.writes.size === 0) return out;
  for (const file of written.envFiles) {
    if (once(written, `env:${file}`)) out.scripts.push(...writtenTexts(written, file) ?? []);
  }
  if (name === "git") gitRuns(written, out);
  for (const { programs, files, reader } of MODULES) {
    if (!programs.test(name)) continue;
    for (const path of writtenPaths(written, files)) {
      if (once(written, `code:${path}`)) out.code.push({ program: reader, texts: writtenTexts(written, path) ?? [] });
    }
  }
  for (const files of COMMAND_FILES) {
    if (!files.programs.test(name)) continue;
    const named = commandFiles(files, words, input);
    for (const path of writtenPaths(written, /./)) {
      if (files.startup.test(path) || named.some((file) => mayBe(file, path))) {
        out.problems.push(`${name} may run commands from ${path}, which this line writes`);
      }
    }
  }
  return out;
}
