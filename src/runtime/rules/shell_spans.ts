/**
 * Where a shell construct that the reader takes whole ends: a `${…}`, an arithmetic `$(( … ))` or `(( … ))`, a
 * backquoted substitution, a here-document's delimiter word. Each answers with where the construct ends, or with a
 * `problem` when the shells themselves disagree or noema cannot be sure (the rules then fail closed: the line
 * matches every deny and ask rule).
 *
 * @module
 */

/** Where a construct ends (the index of its last character), or why that cannot be known. */
export type Span = { end: number; problem?: undefined } | { end?: undefined; problem: string };

/**
 * The index of the bracket closing the one at `from`, counting nested pairs; with `quotes`, brackets inside quotes
 * or after a backslash do not count. -1 when it never closes.
 */
function closing(s: string, from: number, open: string, close: string, quotes: boolean): number {
  let depth = 0;
  for (let j = from, q = ""; j < s.length; j++) {
    const c = s[j];
    if (!quotes) {
      if (c === open) depth++;
      else if (c === close && --depth === 0) return j;
    } else if (c === "\\" && q !== "'") j++;
    else if (q !== "") {
      if (c === q) q = "";
    } else if (c === "'" || c === '"') q = c;
    else if (c === open) depth++;
    else if (c === close && --depth === 0) return j;
  }
  return -1;
}

/**
 * The bracket closing the one at `from`, when reading it with and without quotes agrees: a bracket quoted or
 * escaped inside (`${X:-"}"}`, `(( x == ")" ))`) is read differently by different shells (bash and dash disagree on
 * `"${X:-'}'}"`), so it is a problem rather than a guess.
 *
 * @example
 * ```ts
 * import { matchedClose } from "./shell_spans.ts";
 * matchedClose("${X:-a}", 1, "{", "}"); // { end: 6 }
 * matchedClose('${X:-"}"}', 1, "{", "}", "${…}").problem; // 'a "}" quoted or escaped inside ${…}: …'
 * ```
 */
export function matchedClose(s: string, from: number, open: string, close: string, name = `${open}…${close}`): Span {
  const plain = closing(s, from, open, close, false), quoted = closing(s, from, open, close, true);
  if (plain === quoted && plain !== -1) return { end: plain };
  if (plain === -1 && quoted === -1) return { problem: `unterminated ${name}` };
  return { problem: `a "${close}" quoted or escaped inside ${name}: where it ends depends on the shell` };
}

/**
 * Whether the `((` at `at` opens arithmetic (`$(( … ))`, `(( … ))`, `for (( … ))`) rather than a subshell inside a
 * subshell or a command substitution (`$((rm x); echo)`): as bash reads it, the parenthesis after the first one must
 * close right before a `)`. Returns the index of the last `)` of the arithmetic, -1 when it is not arithmetic, or a
 * problem (unterminated, or a quoted parenthesis inside).
 *
 * @example
 * ```ts
 * import { arithmeticEnd } from "./shell_spans.ts";
 * arithmeticEnd("(( 1 << 2 ))", 0); // { end: 11 }
 * arithmeticEnd("((rm x); (echo))", 0); // { end: -1 }
 * ```
 */
export function arithmeticEnd(s: string, at: number): Span {
  const inner = matchedClose(s, at + 1, "(", ")", "((…))");
  if (inner.problem !== undefined) return inner;
  if (s[inner.end + 1] !== ")") return { end: -1 };
  return { end: inner.end + 1 };
}

/**
 * The text of a backquoted substitution starting at `at` (a backquote) as the shell runs it: inside, `` \` ``,
 * `\\` and `\$` (and `\"` within double quotes) lose their backslash first, so `` `echo \`rm x\`` `` runs
 * `` echo `rm x` ``. Returns the text and the index of the closing backquote, or a problem when it never closes.
 *
 * @example
 * ```ts
 * import { backquoted } from "./shell_spans.ts";
 * backquoted("`echo \\`rm x\\``", 0, false); // { text: "echo `rm x`", end: 14 }
 * ```
 */
export function backquoted(s: string, at: number, inDoubleQuotes: boolean): { text: string; end: number } | {
  problem: string;
} {
  const escaped = inDoubleQuotes ? /[`\\$"]/ : /[`\\$]/;
  let text = "";
  for (let j = at + 1; j < s.length; j++) {
    const c = s[j];
    if (c === "`") return { text, end: j };
    if (c === "\\" && escaped.test(s[j + 1] ?? "")) text += s[++j];
    else text += c;
  }
  return { problem: "unterminated `" };
}

/**
 * The delimiter of a here-document (the word after `<<`, from `at`) as the shell reads it: a shell word whose quotes
 * and escapes are removed (`<<E\ F` ends at a line `E F`, `<<'EOF'` at `EOF`), and whether any of it was quoted
 * (then the body is not expanded). A delimiter holding `$` or a backquote is a problem (shells differ on it).
 *
 * @example
 * ```ts
 * import { heredocDelimiter } from "./shell_spans.ts";
 * heredocDelimiter("cat <<'E F'\n", 6); // { delim: "E F", quoted: true, end: 11 }
 * ```
 */
export function heredocDelimiter(s: string, at: number): { delim: string; quoted: boolean; end: number } | {
  problem: string;
} {
  let delim = "", quoted = false, j = at;
  for (; j < s.length && !/[ \t\n;&|<>()]/.test(s[j]); j++) {
    const c = s[j];
    if (c === "$" || c === "`") return { problem: `a here-document delimiter holding "${c}"` };
    if (c === "\\") {
      if (s[j + 1] === undefined || s[j + 1] === "\n") return { problem: "a here-document delimiter ending in \\" };
      delim += s[++j];
      quoted = true;
    } else if (c === "'" || c === '"') {
      const close = quotedEnd(s, j);
      if (close === -1) return { problem: "unterminated quote in a here-document delimiter" };
      const inside = s.slice(j + 1, close);
      if (c === '"' && /[$`]/.test(inside)) return { problem: `a here-document delimiter holding "$" or "\`"` };
      delim += c === "'" ? inside : inside.replace(/\\([\\"])/g, "$1");
      quoted = true;
      j = close;
    } else delim += c;
  }
  if (delim === "" && !quoted) return { problem: "a here-document without a delimiter" };
  return { delim, quoted, end: j };
}

/** The index of the quote closing the one at `at` (a `"` may hold `\"`), or -1. */
function quotedEnd(s: string, at: number): number {
  const q = s[at];
  for (let j = at + 1; j < s.length; j++) {
    if (q === '"' && s[j] === "\\") j++;
    else if (s[j] === q) return j;
  }
  return -1;
}

/**
 * The body of a here-document whose text starts at `from` (after the newline ending the line that opened it), up to
 * the line that is its delimiter (`strip`: `<<-`, leading tabs removed first), and where the text after it starts.
 * With `join`, lines are compared as bash compares them in an unquoted here-document: a line ending in an odd number
 * of backslashes is first joined with the next (`EO\` then `F` is the line `EOF`); dash does not join them.
 *
 * @example
 * ```ts
 * import { heredocBody } from "./shell_spans.ts";
 * heredocBody("x\nEOF\nls", 0, "EOF", false, false); // { body: "x", next: 6 }
 * heredocBody("EO\\\nF\nls\nEOF", 0, "EOF", false, true).next; // 6
 * ```
 */
export function heredocBody(s: string, from: number, delim: string, strip: boolean, join: boolean): {
  body: string;
  next: number;
} {
  const lines: string[] = [];
  let at = from;
  for (;;) {
    let nl = s.indexOf("\n", at);
    let line = s.slice(at, nl === -1 ? s.length : nl);
    while (join && nl !== -1 && /(^|[^\\])(\\\\)*\\$/.test(line)) {
      const next = s.indexOf("\n", nl + 1); // bash reads the line on: `\`+newline is no part of it
      line = line.slice(0, -1) + s.slice(nl + 1, next === -1 ? s.length : next);
      nl = next;
    }
    const bare = strip ? line.replace(/^\t+/, "") : line;
    at = nl === -1 ? s.length : nl + 1;
    if (bare === delim) break;
    lines.push(bare);
    if (nl === -1) break;
  }
  return { body: lines.join("\n"), next: at };
}
