/**
 * vim's command line read as vim reads it (its `main.c`): the names it goes by (`vim`, `vi`, `ex`, `view`,
 * `vimdiff`, `vim.basic`, Debian's `editor`…), its commands (`-c CMD`, `-cCMD`, `-c` ending a cluster of letters:
 * `-esc CMD`, `--cmd CMD`, `+CMD`), whether it reads its input as Ex commands (a name starting with `ex`, `-e`,
 * `-E`), the files that hold commands it runs (`-S FILE`, `-s FILE` outside Ex mode, `-u FILE`, `-U FILE`), the
 * files it writes keys to (`-w FILE`, `-W FILE`) and the files it edits (its operands). `interpreters.ts` reads its
 * commands, `file_commands.ts` its files, `written_runs.ts` its command files.
 *
 * @module
 */
import { literalWord, type ShellWord, wordFrom } from "./shell.ts";

/**
 * The names vim goes by: its own, its links (`vi`, `ex`, `view`, `rview`, `rvim`, `evim`, `eview`, `vimdiff`,
 * `gvim`, `gview`, `gvimdiff`, `vimx`), Debian's builds and alternatives (`vim.basic`, `vim.tiny`, `editor`) and
 * neovim.
 *
 * @example
 * ```ts
 * import { VIM_NAMES } from "./vim_args.ts";
 * VIM_NAMES.test("vim.basic"); // true
 * ```
 */
export const VIM_NAMES =
  /^(vi|vim|nvim|ex|exim|view|rview|rvim|evim|eview|vimdiff|gvim|gview|gvimdiff|rgvim|rgview|vimx|editor|vim\.[A-Za-z0-9_-]+)$/;

/** vim's command line: see the module. */
export interface VimArgs {
  /** Its commands in order: `--cmd` ones (`before`, run before its start-up files) and `-c`, `+` ones. */
  commands: { word: ShellWord; before: boolean }[];
  /** Whether it runs in Ex mode (reads its input as Ex commands when no command before ends it). */
  ex: boolean;
  /** Files whose text it runs as commands or keys (`-S`, `-s` outside Ex mode, `-u`, `-U`; not `NONE`, `NORC`). */
  commandFiles: ShellWord[];
  /** Files it writes the keys typed to (`-w`, `-W`). */
  writes: ShellWord[];
  /** The files it edits. */
  files: ShellWord[];
  /** What it runs that cannot be read (`--remote-send KEYS` to another vim). */
  problems: string[];
}

/** Long options that take the next word. */
const LONG_VALUE = /^--(cmd|servername|startuptime|log|socketid|windowid|remote-send|remote-expr|listen)$/;
/** Letters that take the next word when last in their cluster (`c` also takes what follows it in the word). */
const WANTS = /^[ciSTuUwWtqs]$/;

/**
 * Reads vim's command line (`words[0]` its name).
 *
 * @example
 * ```ts
 * import { vimArgs } from "./vim_args.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * vimArgs(["ex", "-sc", "%s/a/b/g", "-cx", "f"].map(w)).commands.map((c) => c.word.text); // ["%s/a/b/g", "x"]
 * ```
 */
export function vimArgs(words: readonly ShellWord[]): VimArgs {
  const name = words[0]?.text.replace(/^.*\//, "") ?? "";
  const out: VimArgs = { commands: [], ex: /^ex/.test(name), commandFiles: [], writes: [], files: [], problems: [] };
  let k = 1;
  for (; k < words.length; k++) {
    const w = words[k], t = w.text;
    if (t === "--") break;
    if (w.dynamic && !w.literal.startsWith("-") && !w.literal.startsWith("+")) out.files.push(w);
    else if (t.startsWith("+")) out.commands.push({ word: wordFrom(w, 1), before: false });
    else if (t.startsWith("--")) k = longOption(words, k, out);
    else if (t.startsWith("-") && t.length > 1) k = cluster(words, k, out);
    else out.files.push(w);
  }
  out.files.push(...words.slice(k + 1));
  out.commands = out.commands.filter((c) => c.word.text !== "" || c.word.dynamic); // `+`: the last line
  return out;
}

/** Reads the long option at `k`; returns the index of its last word. */
function longOption(words: readonly ShellWord[], k: number, out: VimArgs): number {
  const t = words[k].text;
  if (!LONG_VALUE.test(t)) return k;
  const value = words[k + 1];
  if (value === undefined) return k;
  if (t === "--cmd") out.commands.push({ word: value, before: true });
  if (t === "--remote-send" || t === "--remote-expr") {
    out.problems.push(`vim's ${t} runs ${value.text.slice(0, 60)} in another vim`);
  }
  return k + 1;
}

/** Reads the cluster of letters at `k` (`-Nesc`, `-cCMD`, `-V9log`, `-o2`); returns the index of its last word. */
function cluster(words: readonly ShellWord[], k: number, out: VimArgs): number {
  const w = words[k], t = w.text;
  for (let i = 1; i < t.length; i++) {
    const c = t[i];
    if (c === "e" || c === "E") out.ex = true;
    if (c === "V") return k; // `-V[N][file]`: the rest of the word
    if (/[oOpw]/.test(c) && /\d/.test(t[i + 1] ?? "")) {
      while (/\d/.test(t[i + 1] ?? "")) i++;
      continue;
    }
    if (!WANTS.test(c) || (c === "s" && out.ex)) continue;
    const attached = i + 1 < t.length;
    if (c === "c" && attached) return out.commands.push({ word: wordFrom(w, i + 1), before: false }), k;
    if ((c === "t" || c === "q") && attached) return k; // `-tTAG`, `-qFILE`
    const value = words[k + 1];
    if (attached) return k; // vim stops at garbage after the letter
    if (c === "S" && (value === undefined || value.text.startsWith("-"))) {
      return out.commandFiles.push(literalWord("Session.vim")), k; // `-S` alone
    }
    if (value === undefined) return k;
    if (c === "c") out.commands.push({ word: value, before: false });
    else if (/[SsuU]/.test(c) && !/^(NONE|NORC|NOSKIP|DEFAULTS)$/.test(value.text)) out.commandFiles.push(value);
    else if (c === "w" || c === "W") out.writes.push(value);
    return k + 1;
  }
  return k;
}
