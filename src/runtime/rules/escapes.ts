/**
 * Programs with a command language of their own that runs shell commands: `ed`'s `!CMD` (and `r !CMD`, `w !CMD`,
 * `e !CMD`), sqlite3's dot-commands (`.shell CMD`, `.system CMD`, and `.once`, `.output`, `.read` or `.import` of
 * `|CMD`), psql's backslash commands (`\! CMD`, `\o |CMD`, `\g |CMD`, `\w |CMD`, `\copy … program 'CMD'`, and the
 * backquotes any backslash command expands), and the mysql or mariadb client's (`system CMD`, `\! CMD`, `pager CMD`,
 * `\P CMD`). Each line naming one is read as a command line of its own; one whose command is only known when it runs
 * is a problem.
 *
 * Their commands come from their arguments (`sqlite3 db '.shell …'`, `sqlite3 -cmd`, `psql -c`, `mysql -e`) or, when
 * the arguments give none, from their input: a here-document or here-string is read, and so is a file the line wrote
 * (`echo '.shell …' > f; sqlite3 db < f`); another file is not read (like a script file, see docs/rules.md); any other
 * input (a pipe, the terminal) is only known when it runs: a problem.
 *
 * @module
 */
import type { Runs } from "./command_options.ts";
import { literalWord, type ShellWord } from "./shell.ts";

/** What a command reads on its input: a here-document's text, or the file `<` gives it (and its text, if written). */
export interface CommandInput {
  /** The here-document or here-string it reads. */
  heredoc?: ShellWord;
  /** The file `<` gives it. */
  file?: ShellWord;
  /** The text of that file, when the line wrote it. */
  written?: ShellWord;
}

/** How one program takes its commands, and which of their lines run a shell command. */
interface Language {
  /** Options whose value holds commands (`-c`, `--command`, `-e`, `-cmd`). */
  commands: RegExp;
  /** Other options that take a value (the next word), so that it is not read as an operand. */
  values: RegExp;
  /** Options after which it reads its commands from a file, not from its input (`-f FILE`): no input to read. */
  file?: RegExp;
  /** Whether operands after the first are commands (`sqlite3 DB SQL…`). */
  operands?: boolean;
  /** The shell command a line of its language runs, if any (null: a command only known when it runs). */
  shell: (line: string) => (string | null)[];
}

/**
 * ed: `!CMD`, `r !CMD`, `w !CMD`, `e !CMD` after any address or pattern: the rest of the line after each `!` (a
 * pattern may hold one first: `/!/w !CMD`); ed puts the file's name for an unescaped `%` and the last command for
 * `!!`: unknown here.
 */
function edShell(line: string): (string | null)[] {
  const out: (string | null)[] = [];
  for (let bang = line.indexOf("!"); bang !== -1; bang = line.indexOf("!", bang + 1)) {
    const command = line.slice(bang + 1);
    out.push(/(^|[^\\])%/.test(command) || command.startsWith("!") ? null : command);
  }
  return out;
}

/** sqlite3's dot-commands, each as it may be abbreviated (sqlite3 takes a prefix: `.sh`, `.sys`, `.o`). */
const SQLITE_SHELL = ["shell", "system"];
const SQLITE_PIPED = ["once", "output", "read", "import"];

/** sqlite3: `.shell`/`.system CMD`, `.once|.output|.read|.import '|CMD'`, abbreviated too; `edit()` runs an editor. */
function sqliteShell(line: string): (string | null)[] {
  if (/\bedit\s*\(/i.test(line)) return [null]; // edit(text, EDITOR) runs EDITOR
  const m = /^\s*\.\s*([a-z]+)\b\s*(.*)$/s.exec(line);
  if (m === null) return [];
  const abbreviates = (names: string[]) => m[1].length >= 2 && names.some((n) => n.startsWith(m[1]));
  if (abbreviates(SQLITE_SHELL)) return [m[2]];
  if (!(m[1].length >= 1 && SQLITE_PIPED.some((n) => n.startsWith(m[1])))) return [];
  const pipe = /^(?:-[a-z]+\s+)*(["']?)\|(.*)$/s.exec(m[2]);
  if (pipe === null) return [];
  return [pipe[1] !== "" && pipe[2].endsWith(pipe[1]) ? pipe[2].slice(0, -1) : pipe[2]];
}

/** psql: `\! CMD`, `\o|\g|\w |CMD`, `\copy … program 'CMD'`, and backquotes in a backslash command. */
function psqlShell(line: string): (string | null)[] {
  const out: (string | null)[] = [];
  for (const m of line.matchAll(/\\!\s*(.*)$/gs)) out.push(m[1]);
  for (const m of line.matchAll(/\\(?:o|out|g|gx|w|write)\s*\|\s*(.*)$/gs)) out.push(m[1]);
  for (const m of line.matchAll(/\bprogram\s+'((?:[^']|'')*)'/gis)) out.push(m[1].replaceAll("''", "'"));
  if (/\bprogram\s+(?!')/i.test(line) && /\\copy\b/i.test(line)) out.push(null);
  if (line.includes("\\")) { for (const m of line.matchAll(/`([^`]*)`/g)) out.push(m[1]); }
  return out;
}

/** mysql and mariadb: `system CMD`, `\! CMD`, `pager CMD`, `\P CMD`. */
function mysqlShell(line: string): (string | null)[] {
  const out: (string | null)[] = [];
  const word = /^\s*(system|pager)\s+(.*)$/is.exec(line);
  if (word !== null) out.push(word[2]);
  for (const m of line.matchAll(/\\[!P]\s*([^;]*)/g)) out.push(m[1]);
  return out;
}

const LANGUAGES: Record<string, Language> = {
  ed: { commands: /^$/, values: /^-p$/, shell: edShell },
  sqlite3: {
    commands: /^--?cmd$/,
    values: /^--?(separator|newline|nullvalue|init|vfs|maxsize|mmap|pagecache|lookaside|heap|zip|A|escape)$/,
    operands: true,
    shell: sqliteShell,
  },
  psql: {
    commands: /^(-c|--command)$/,
    values:
      /^(-d|--dbname|-h|--host|-p|--port|-U|--username|-v|--set|--variable|-o|--output|-L|--log-file|-P|--pset|-T|--table-attr|-F|--field-separator|-R|--record-separator)$/,
    file: /^(-f|--file)$/,
    shell: psqlShell,
  },
  mysql: {
    commands: /^(-e|--execute)$/,
    values:
      /^(-u|--user|-h|--host|-P|--port|-D|--database|-S|--socket|--defaults-file|--defaults-extra-file|--login-path|--default-character-set|--init-command)$/,
    shell: mysqlShell,
  },
};

/** The language `name` runs commands in, if it is one of these programs. */
function languageOf(name: string): Language | null {
  if (name === "mariadb") return LANGUAGES.mysql;
  if (name === "sqlite") return LANGUAGES.sqlite3;
  return Object.hasOwn(LANGUAGES, name) ? LANGUAGES[name] : null;
}

/** The command texts a program's words give it, and whether it reads more from its input. */
function givenCommands(lang: Language, words: readonly ShellWord[]): { texts: ShellWord[]; input: boolean } {
  const texts: ShellWord[] = [];
  let operands = 0, file = false;
  for (let k = 1; k < words.length; k++) {
    const w = words[k], t = w.text;
    const eq = t.startsWith("--") ? t.indexOf("=") : -1;
    const option = eq > 0 ? t.slice(0, eq) : t;
    if (lang.commands.test(option)) {
      texts.push(eq > 0 ? { ...w, text: t.slice(eq + 1) } : words[++k] ?? literalWord(""));
    } else if (lang.file?.test(option)) {
      const f = eq > 0 ? t.slice(eq + 1) : words[++k]?.text;
      file ||= f !== "-"; // `-f -`: its input
    } else if (lang.values.test(option)) k += eq > 0 ? 0 : 1;
    else if (!t.startsWith("-") || w.dynamic) {
      if (operands++ > 0 && lang.operands) texts.push(w);
    }
  }
  return { texts, input: texts.length === 0 && !file };
}

/**
 * What a program with a command language of its own runs (see the module doc); null when `name` is none of them.
 *
 * @example
 * ```ts
 * import { escapeRuns } from "./escapes.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * escapeRuns("sqlite3", ["sqlite3", "db", ".shell git push"].map(w), {})?.scripts[0].script.text; // "git push"
 * ```
 */
export function escapeRuns(name: string, words: readonly ShellWord[], input: CommandInput): Runs | null {
  const lang = languageOf(name);
  if (lang === null) return null;
  const runs: Runs = { scripts: [], commands: [], problems: [] };
  const given = givenCommands(lang, words);
  const texts = [...given.texts];
  if (given.input) {
    const from = input.heredoc ?? input.written ?? null;
    if (from !== null) texts.push(from);
    else if (input.file === undefined || input.file.dynamic) {
      runs.problems.push(`${name} reads its commands from its input, unknown until it runs`);
    }
  }
  for (const text of texts) {
    if (text.dynamic) {
      runs.problems.push(`${name} runs commands only known when it runs: ${text.text.slice(0, 80)}`);
      continue;
    }
    for (const line of text.text.split("\n")) {
      for (const command of lang.shell(line)) {
        if (command === null) {
          runs.problems.push(`${name} runs a command only known when it runs: ${line.slice(0, 80)}`);
        } else runs.scripts.push({ script: literalWord(command), args: false });
      }
    }
  }
  return runs;
}
