/**
 * vim's Ex command lines (`vim -c CMD`, `+CMD`, `--cmd CMD`, the input of `ex` and `vim -es`): the shell commands
 * they run. A line is read as vim reads it: a range (`%`, `1,$`, `'a`, `/pat/`), command modifiers (`silent!`,
 * `sil`, `keepalt`, `vert`, `noautocmd`, `filter /pat/`…), a command (by any abbreviation vim takes), and after a
 * `|` the next command. `!CMD`, `r !CMD`, `w !CMD` and `terminal CMD` run a shell command (to the end of the line,
 * its `|` included); `windo`, `bufdo`, `tabdo`, `argdo`, `cdo`, `g/pat/`, `autocmd` and `command` run a command
 * given to them; `execute` runs its string literals joined. What cannot be read fails closed: `execute` of anything
 * but string literals, `normal` keys that enter a command line, a register run as commands (`@a`), `:shell`,
 * setting an option that names a program vim runs (`set makeprg=…`, `let &shell=…`), and a shell command holding
 * `!`, `%` or `#`, which vim replaces with the previous command or a file name. `make`, `grep`, `lgrep`, `grepadd`
 * and `lgrepadd` run 'makeprg' or 'grepprg' in a shell with the rest of the line (`|` included: read as `make ARGS`,
 * `grep ARGS`). Calls that run what they are given (`system()`, `job_start()`, `execute()`, `feedkeys()`…) given
 * anything but string literals, and `setbufvar(…, '&mp', …)` of anything else, fail closed; so does `:normal` (not
 * `normal!`) or `feedkeys()` once a mapping or abbreviation is defined (`maps`, `typed`: the caller joins them). It
 * also tells which files `:source` runs and whether the line's last command ends vim (`quits`).
 *
 * @module
 */

/** The shell commands an Ex command line runs, and why parts of it cannot be read. */
export interface ExReading {
  /** The shell commands it runs. */
  shell: string[];
  /** Why (parts of) it cannot be read. */
  problems: string[];
  /** Files it runs as commands (`source FILE`, `so! FILE`). */
  sourced?: string[];
  /** Whether it defines a mapping or abbreviation (`nnoremap Z :!…<CR>`): keys `:normal` types may run it. */
  maps?: true;
  /** Whether it types keys through mappings (`normal Z`, `feedkeys(…)`): what a mapping it defines runs. */
  typed?: true;
  /**
   * Whether its last command ends vim: `always` (`q!`, `qa!`, `cq`), `written` (`wq`, `x`: when the file is written;
   * with no file to write they fail and vim goes on), or undefined (`q` fails on a changed buffer).
   */
  quits?: "always" | "written";
}

/** Commands nested in commands (`windo exe "sil !…"`) read before the line counts as unreadable. */
const MAX_DEPTH = 8;

/** Each command by its full name and the shortest abbreviation vim takes. */
type Names = [full: string, shortest: number][];

/** Modifiers, which run the command after them. */
const MODIFIERS: Names = [
  ["aboveleft", 3],
  ["belowright", 3],
  ["botright", 2],
  ["browse", 3],
  ["confirm", 4],
  ["filter", 4],
  ["hide", 3],
  ["horizontal", 3],
  ["keepalt", 5],
  ["keepjumps", 5],
  ["keepmarks", 3],
  ["keeppatterns", 5],
  ["leftabove", 5],
  ["legacy", 3],
  ["lockmarks", 3],
  ["noautocmd", 3],
  ["noswapfile", 3],
  ["rightbelow", 6],
  ["sandbox", 3],
  ["silent", 3],
  ["tab", 3],
  ["topleft", 2],
  ["unsilent", 3],
  ["verbose", 4],
  ["vertical", 4],
  ["vim9cmd", 4],
  ["debug", 3],
];
/** Commands that run the command given to them, `|` and all. */
const RUNNERS: Names = [
  ["windo", 5],
  ["bufdo", 5],
  ["tabdo", 5],
  ["argdo", 5],
  ["cdo", 3],
  ["cfdo", 3],
  ["ldo", 3],
  ["lfdo", 3],
  ["folddoopen", 5],
  ["folddoclosed", 7],
];
/** Commands whose argument is the rest of the line, `|` included, and runs no command of vim's. */
const REST: Names = [
  ["python", 2],
  ["python3", 3],
  ["py3", 3],
  ["pythonx", 3],
  ["pyx", 3],
  ["pydo", 3],
  ["py3do", 4],
  ["lua", 3],
  ["luado", 4],
  ["perl", 2],
  ["perldo", 5],
  ["ruby", 3],
  ["rubydo", 5],
  ["tcl", 3],
  ["tcldo", 4],
  ["mzscheme", 2],
  ["help", 1],
  ["helpgrep", 5],
  ["function", 2],
];
/** The commands that run 'grepprg' in a shell with their arguments. */
const GREP: Names = [["grep", 2], ["lgrep", 3], ["grepadd", 5], ["lgrepadd", 6]];
/** The commands that define a mapping or an abbreviation (keys a later `:normal` types may run). */
const MAPS: Names = [
  ["map", 3],
  ["noremap", 2],
  ...["n", "v", "x", "o", "i", "l", "c"].flatMap((m): Names => [[`${m}map`, 2], [`${m}noremap`, 2]]),
  ["smap", 4],
  ["snoremap", 4],
  ["tmap", 3],
  ["tnoremap", 3],
  ["abbreviate", 2],
  ["iabbrev", 2],
  ["cabbrev", 2],
  ["noreabbrev", 5],
  ["inoreabbrev", 6],
  ["cnoreabbrev", 6],
  ["menu", 2],
  ["amenu", 2],
  ["nmenu", 3],
];
/** Options naming a program or expression vim runs later. */
const PROGRAM_OPTIONS =
  "shell|sh|shellcmdflag|shcf|shellpipe|sp|shellredir|srr|shellquote|shq|shellxquote|sxq|shellxescape|sxe|makeprg|mp|grepprg|gp|keywordprg|kp|equalprg|ep|formatprg|fp|diffexpr|dex|patchexpr|pex|printexpr|pexpr|charconvert|ccv|cscopeprg|csprg";
const SET_PROGRAM = new RegExp(`(?:^|\\s)(?:${PROGRAM_OPTIONS})\\s*[-+^]?[=:]`);
const LET_PROGRAM = new RegExp(`&(?:[lg]:)?(?:${PROGRAM_OPTIONS})\\b`);

/** The full name `name` abbreviates among `names`, or null. */
function named(name: string, names: Names): string | null {
  return names.find(([full, shortest]) => name.length >= shortest && full.startsWith(name))?.[0] ?? null;
}

/** Whether `name` abbreviates `full` (at least `shortest` letters). */
function is(name: string, full: string, shortest: number): boolean {
  return name.length >= shortest && full.startsWith(name);
}

/** Whether a command ends vim: see {@link ExReading.quits}. */
function quitOf(name: string, bang: string): ExReading["quits"] {
  if (is(name, "cquit", 2)) return "always";
  if (bang && (is(name, "quit", 1) || is(name, "qall", 2) || is(name, "quitall", 5))) return "always";
  const writes = [["wq", 2], ["wqall", 3], ["xit", 1], ["exit", 3], ["xall", 2]] as const;
  return writes.some(([full, n]) => is(name, full, n)) ? "written" : undefined;
}

/** Where a range (`%`, `.,$`, `'a,'b`, `/pat/`, `?pat?`, `\/`, `+3`) starting at `i` ends. */
function rangeEnd(text: string, i: number): number {
  while (i < text.length) {
    const c = text[i];
    if (/[\s\d.$%,;+\-:]/.test(c)) i++;
    else if (c === "'") i += 2;
    else if (c === "\\" && /[/?&]/.test(text[i + 1] ?? "")) i += 2;
    else if (c === "/" || c === "?") i = delimitedEnd(text, i);
    else break;
  }
  return i;
}

/** Where a pattern delimited by `text[i]` (`/pat/`) ends: after its closing delimiter, or the text's end. */
function delimitedEnd(text: string, i: number): number {
  const delimiter = text[i];
  for (let k = i + 1; k < text.length; k++) {
    if (text[k] === "\\") k++;
    else if (text[k] === delimiter || text[k] === "\n") return k + 1;
  }
  return text.length;
}

/** Where the command starting at `i` ends: its `|` or newline (vim reads `\|` as a `|`; splitting there over-reads). */
function commandEnd(text: string, i: number): number {
  const m = /[|\n]/.exec(text.slice(i));
  return m === null ? text.length : i + m.index;
}

/** A shell command `!` runs: unreadable when it holds `!`, `%`, `#` or `<cword>`…, which vim replaces first. */
function shellCommand(command: string, out: ExReading): void {
  const special = /(?<!\\)[!%#]|<(?:cword|cWORD|cexpr|cfile|afile|abuf|amatch|sfile|stack|script|slnum|sflnum|client)>/
    .exec(command);
  if (special !== null) {
    out.problems.push(`vim replaces ${special[0]} in the shell command ${command.trim()} with text known when it runs`);
  } else out.shell.push(command.replace(/\\([!%#])/g, "$1"));
}

/**
 * The text `execute` runs when its arguments are string literals (`"…"`, `'…'`) joined by `.` or `..` (without a
 * space) or given apart (with one); null when they are anything else (a variable, a call).
 */
function executed(args: string): string | null {
  let text = "", i = 0, joined = true;
  while (i < args.length) {
    const space = /^\s+/.exec(args.slice(i));
    if (space !== null) {
      i += space[0].length;
      continue;
    }
    if (args.startsWith("..", i) || args[i] === ".") {
      i += args.startsWith("..", i) ? 2 : 1;
      joined = true;
      continue;
    }
    const lit = vimString(args, i);
    if (lit === null) return null;
    text += (joined || text === "" ? "" : " ") + lit.text;
    joined = false;
    i = lit.end;
  }
  return text;
}

/** The vim string literal at `i`: `"…"` with backslash escapes (`\<CR>` a newline), `'…'` with `''`; or null. */
function vimString(text: string, i: number): { text: string; end: number } | null {
  const quote = text[i];
  if (quote !== '"' && quote !== "'") return null;
  let out = "";
  for (let k = i + 1; k < text.length; k++) {
    if (quote === "'" && text[k] === "'" && text[k + 1] === "'") out += text[++k];
    else if (text[k] === quote) return { text: out, end: k + 1 };
    else if (quote === '"' && text[k] === "\\" && k + 1 < text.length) {
      const key = /^<(CR|NL|Enter|Return)>/i.exec(text.slice(k + 1));
      out += key !== null
        ? "\n"
        : ({ n: "\n", r: "\n", t: "\t" } as Record<string, string>)[text[k + 1]] ?? text[k + 1];
      k += key !== null ? key[0].length : 1;
    } else out += text[k];
  }
  return null;
}

/**
 * The shell commands an Ex command line runs (see the module), and why parts of it cannot be read.
 *
 * @example
 * ```ts
 * import { exCommands } from "./ex_commands.ts";
 * exCommands("sil! windo echo 1 | !git push").shell; // ["git push"]
 * exCommands('exe "!git" . " push"').shell; // ["git push"]
 * ```
 */
export function exCommands(text: string, depth = 0): ExReading {
  const out: ExReading = { shell: [], problems: [] };
  readLine(text, depth, out);
  if (depth === 0) callProblems(text, out);
  return out;
}

/** vim functions that run a shell command, Ex commands or keys given as their arguments. */
const RUNS_ARGUMENTS =
  "system|systemlist|job_start|term_start|jobstart|termopen|execute|win_execute|feedkeys|remote_send|remote_expr|libcall|libcallnr|eval";
/** Functions that call a function named by their first argument (`call('system', …)`, `function('system')`). */
const CALLS_NAMED = "call|function|funcref";
/** Functions that set an option (`setbufvar(1, '&makeprg', …)`): the index of the name among their arguments. */
const SETS_VARIABLE: Record<string, number> = { setbufvar: 1, setwinvar: 1, settabwinvar: 2, settabvar: 1 };
const CALL = new RegExp(
  `(?<![\\w#:.])(${RUNS_ARGUMENTS}|${CALLS_NAMED}|${Object.keys(SETS_VARIABLE).join("|")})\\s*\\(`,
  "g",
);

/**
 * Calls in vim code whose command is built when it runs: a function that runs a shell command, Ex commands or keys
 * (`system(printf('%sm x', 'r'))`) given anything but string literals (their literals are read as command lines),
 * a function named to `call()`/`function()` that is one of them or not a literal, and an option set by
 * `setbufvar(…, '&mp', …)` to anything but a literal. `feedkeys()` types keys through the mappings.
 */
function callProblems(text: string, out: ExReading): void {
  for (const m of text.matchAll(CALL)) {
    const fn = m[1], args = callArguments(text, m.index + m[0].length);
    if (fn === "feedkeys") out.typed = true;
    const why = `vim's ${fn}() runs what it is given, built when it runs: ${text.slice(m.index, m.index + 80)}`;
    if (args === null) out.problems.push(why);
    else if (new RegExp(`^(${RUNS_ARGUMENTS})$`).test(fn)) {
      if (!args.every(literalArgument)) out.problems.push(why);
    } else if (new RegExp(`^(${CALLS_NAMED})$`).test(fn)) {
      const named = args[0] === undefined ? null : executed(args[0].trim());
      if (named === null || new RegExp(`^(${RUNS_ARGUMENTS})$`).test(named)) out.problems.push(why);
    } else {
      const option = args[SETS_VARIABLE[fn]] === undefined ? null : executed(args[SETS_VARIABLE[fn]].trim());
      const value = args[SETS_VARIABLE[fn] + 1];
      if (option === null || (option.startsWith("&") && (value === undefined || !literalArgument(value)))) {
        out.problems.push(why);
      }
    }
  }
}

/** The arguments of a call whose `(` is before `i`, split at their top-level commas; null when it does not end. */
function callArguments(text: string, i: number): string[] | null {
  const args: string[] = [];
  let depth = 0, from = i;
  for (let k = i; k < text.length; k++) {
    const c = text[k];
    if (c === '"' || c === "'") {
      const lit = vimString(text, k);
      if (lit === null) return null;
      k = lit.end - 1;
    } else if (c === "(" || c === "[" || c === "{") depth++;
    else if ((c === ")" || c === "]" || c === "}") && depth > 0) depth--;
    else if (c === ")") {
      return args.concat(text.slice(from, k).trim() === "" && args.length === 0 ? [] : text.slice(from, k));
    } else if (c === "," && depth === 0) args.push(text.slice(from, k)), from = k + 1;
  }
  return null;
}

/** Whether an argument is made of string literals, numbers and lists or dictionaries of them only. */
function literalArgument(arg: string): boolean {
  for (let i = 0; i < arg.length;) {
    const lit = arg[i] === '"' || arg[i] === "'" ? vimString(arg, i) : null;
    if (lit !== null) i = lit.end;
    else {
      const token = /^(\s+|\.\.?|[,:[\]{}#]|-?\d+|v:(true|false|null|none))/.exec(arg.slice(i));
      if (token === null) return false;
      i += token[0].length;
    }
  }
  return true;
}

/** Reads each command of `text` (up to its `|` or newline, or its end for one that takes the rest) into `out`. */
function readLine(text: string, depth: number, out: ExReading): void {
  if (depth > MAX_DEPTH) return void out.problems.push(`vim commands nested deeper than ${MAX_DEPTH}`);
  for (let at: number | null = 0; at !== null && at < text.length;) at = readCommand(text, at, depth, out);
}

/** Reads the command at `i`; returns where the next one starts, or null when it took the rest of the text. */
function readCommand(text: string, i: number, depth: number, out: ExReading): number | null {
  i = rangeEnd(text, i);
  const m = /^([A-Za-z][A-Za-z0-9]*|@)(!?)[ \t]*/.exec(text.slice(i));
  if (m !== null || text[i] === "!") out.quits = m === null ? undefined : quitOf(m[1], m[2]);
  if (text[i] === "!") {
    shellCommand(text.slice(i + 1), out);
    return nextLine(text, i); // the shell command may end there: the next line is read as vim's too
  }
  if (m === null) return commandEnd(text, i) + 1;
  const [, name, bang] = m;
  const start = i + m[0].length, end = commandEnd(text, start);
  const args = text.slice(start, end), rest = text.slice(start);
  if (named(name, MODIFIERS) !== null) {
    const after = named(name, MODIFIERS) === "filter" ? delimitedEnd(text, start) : start;
    return readCommand(text, after, depth, out);
  }
  if (named(name, RUNNERS) !== null) return readLine(rest, depth + 1, out), out.quits = undefined, null;
  if (named(name, REST) !== null) return nextLine(text, start);
  if (/^(g|gl|glo|glob|globa|global|v|vg|vgl|vglo|vglob|vgloba|vglobal)$/.test(name)) {
    return readLine(text.slice(delimitedEnd(text, start)), depth + 1, out), out.quits = undefined, null;
  }
  const took = readOther(name, bang, args, rest, depth, out);
  if (depth > 0 || took || is(name, "execute", 3)) out.quits = depth > 0 ? out.quits : undefined;
  return took ? nextLine(text, start) : end + 1;
}

/** Where the line after the one at `i` starts (a command that took the rest of its line ends there), or null. */
function nextLine(text: string, i: number): number | null {
  const newline = text.indexOf("\n", i);
  return newline === -1 ? null : newline + 1;
}

/** Reads the commands that run a shell or another command; true when it took the rest of the text. */
function readOther(name: string, bang: string, args: string, rest: string, depth: number, out: ExReading): boolean {
  const options = /^(\+\+\S+\s*)*/.exec(args)![0].length; // `w ++enc=utf8 !cmd`
  if ((is(name, "read", 1) && (bang || args[options] === "!")) || (is(name, "write", 1) && args[options] === "!")) {
    shellCommand(bang && is(name, "read", 1) ? rest : rest.slice(rest.indexOf("!") + 1), out);
    return true;
  }
  if (is(name, "terminal", 3)) return shellCommand(rest.slice(/^(\+\+\S+\s*)*/.exec(rest)![0].length), out), true;
  if (is(name, "make", 3) || is(name, "lmake", 4) || GREP.some(([full, n]) => is(name, full, n))) {
    // Their argument is the rest of the line, `|` included: `make` runs 'makeprg', the others 'grepprg' (grep -n).
    const line = rest.slice(0, rest.indexOf("\n") === -1 ? rest.length : rest.indexOf("\n"));
    shellCommand(`${is(name, "make", 3) || is(name, "lmake", 4) ? "make" : "grep"} ${line}`, out);
    return true;
  } else if (MAPS.some(([full, n]) => is(name, full, n))) {
    out.maps = true; // its right-hand side is keys, read when `:normal` types them: see `typed`
    return true;
  } else if (is(name, "source", 2)) (out.sourced ??= []).push(args.trim().replace(/\\(.)/g, "$1"));
  else if (is(name, "execute", 3)) {
    const command = executed(args);
    if (command === null) out.problems.push(`vim's :execute runs a command built when it runs: ${args.trim()}`);
    else readLine(command, depth + 1, out);
  } else if (is(name, "normal", 4)) {
    if (/[:!Q@]/.test(rest)) out.problems.push(`vim's :normal types keys that may run commands: ${rest.trim()}`);
    if (!bang) out.typed = true; // `normal!` uses no mapping
    return true;
  } else if (is(name, "emenu", 2) || is(name, "popup", 4)) out.typed = true; // a menu item's keys
  else if (name === "@") out.problems.push("vim runs a register's text as commands, known only when it runs");
  else if (is(name, "shell", 2)) out.problems.push("vim's :shell starts a shell, whose commands are unknown");
  else if ((is(name, "set", 2) || is(name, "setlocal", 4) || is(name, "setglobal", 4)) && SET_PROGRAM.test(args)) {
    out.problems.push(`vim's :set ${args.trim()} names a program vim runs later`);
  } else if (is(name, "let", 3) && LET_PROGRAM.test(args)) {
    out.problems.push(`vim's :let ${args.trim()} names a program vim runs later`);
  } else if (is(name, "autocmd", 2)) {
    // au[!] [group] {event} {pattern} [++once] [++nested] {command}: the command after the second or third word.
    const words = [...rest.matchAll(/\S+/g)];
    for (let k = 2; k <= 3; k++) {
      let at = k;
      while (words[at] !== undefined && /^\+\+/.test(words[at][0])) at++;
      if (words[at] !== undefined) readLine(rest.slice(words[at].index), depth + 1, out);
    }
    return true;
  } else if (is(name, "command", 3)) {
    const words = [...rest.matchAll(/\S+/g)].filter((w) => !w[0].startsWith("-"));
    if (words[1] !== undefined) readLine(rest.slice(words[1].index), depth + 1, out);
    return true;
  }
  return false;
}
