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
import type { ShellWord } from "./shell.ts";
import { type Written, writtenPaths, writtenTexts } from "./written_scripts.ts";

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

/** Programs that run commands from files named in their arguments, or from start-up files, in their own language. */
const COMMAND_FILES: { programs: RegExp; startup: RegExp }[] = [
  { programs: /^(vim?|nvim|ex|view|gvim|rvim|evim|vimdiff)$/, startup: /(^|\/)[._]?(g?vimrc|exrc)$|\.vim$/ },
  { programs: /^(c?gdb|lldb)$/, startup: /(^|\/)\.(gdbinit|lldbinit)$/ },
  { programs: /^(sqlite3|psql|mysql)$/, startup: /(^|\/)\.(sqliterc|psqlrc|my\.cnf)$/ },
];

/** git's hooks (any folder named `hooks`: `.git/hooks`, a `GIT_DIR`'s, a `core.hooksPath` of that name). */
const HOOKS = /(^|\/)hooks\/[^/]+$/;
/**
 * git's settings files: aliases, `core.pager`, filters and more run commands. Attributes files (`.gitattributes`) are
 * not: they only name filters and drivers, whose commands come from settings.
 */
const GIT_SETTINGS = /(^|\/)(\.git\/config|\.gitconfig|git\/config)$/;

/**
 * Whether a word names a file as one to read commands from: its name stands apart in it (`so s`, `of=s`, `-Ss`), or
 * it is the value of an option (`-S s`, `-x g`). A word that is the file alone after no option is what the program
 * edits or opens (`vim f`, `sqlite3 db`), not commands.
 */
function names(words: readonly ShellWord[], file: string): boolean {
  const base = posix.basename(file).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  if (base === "") return false;
  const apart = new RegExp(`(^|[^A-Za-z0-9_.-]|^-[A-Za-z]+)${base}($|[^A-Za-z0-9_.-])`);
  const alone = new RegExp(`^(\\.?/)?([^ ]*/)?${base}$`);
  return words.some((w, k) => {
    const text = w.dynamic ? w.literal : w.text;
    if (!apart.test(text)) return false;
    return !alone.test(text) || (k > 0 && /^-/.test(words[k - 1].text) && !/^--?$/.test(words[k - 1].text));
  });
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
export function indirectRuns(written: Written, name: string, words: readonly ShellWord[]): IndirectRuns {
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
  for (const { programs, startup } of COMMAND_FILES) {
    if (!programs.test(name)) continue;
    for (const path of writtenPaths(written, /./)) {
      if (startup.test(path) || names(words.slice(1), path)) {
        out.problems.push(`${name} may run commands from ${path}, which this line writes`);
      }
    }
  }
  return out;
}
