/**
 * A small POSIX-shell reader for `Bash(...)` rules: it splits a command line
 * into the simple commands it would run, whatever joins them (`&&`, `||`,
 * `;`, `|`, `&`, newlines, subshells `( … )`, groups `{ …; }`), and reads the
 * commands hidden in substitutions (`$( … )`, backquotes, `<( … )`). Quotes
 * and escapes are removed the way the shell removes them (`'git' push`,
 * `g"it" push`, `$'\x67it' push` all read `git push`); redirections are
 * dropped; here-documents are kept aside (a shell reading one runs it).
 *
 * It does not expand anything: a word holding `$VAR`, `${…}`, a
 * substitution, or an unquoted glob (`g?t`, `pu[s]h`) or brace expansion
 * (`{git,push}`) is marked `dynamic`, with the literal text before the first
 * expansion. The commands inside `${X:-$(…)}`, `$(( $(…) ))` and inside a
 * here-document whose delimiter is unquoted are read too (the shell runs
 * them); `$"…"` is read as `"…"`. What it cannot read (an unterminated quote, too deep a nesting)
 * is reported as a `problem`, and the rules treat it as matching every deny
 * and ask rule (fail closed).
 *
 * @module
 */

/** One word of a simple command, its quotes removed. */
export interface ShellWord {
  /** The word as the shell would pass it (expansions left as written). */
  text: string;
  /** Whether it holds an expansion (`$VAR`, `${…}`, `$(…)`, a backquote) whose value is unknown. */
  dynamic: boolean;
  /** The literal text before the first expansion (all of `text` when not dynamic). */
  literal: string;
  /**
   * True when the word reads like an assignment (`x=…`, `a[0]=…`) but its name or `=` is quoted or escaped
   * (`'x=/bin/rm'`): the shell runs it as a command, not an assignment.
   */
  notAssignment?: boolean;
}

/**
 * Whether a path names the reading program's own standard input: `/dev/stdin`, `/dev/fd/0`, `/proc/self/fd/0` and
 * the same spelled otherwise (`//dev/./stdin`, `/dev//fd/0`, `../../dev/stdin`), and `-` when `dash` is set.
 *
 * @example
 * ```ts
 * import { isStdinPath } from "./shell.ts";
 * isStdinPath("//dev/./stdin"); // true
 * isStdinPath("./stdin.sh"); // false
 * ```
 */
export function isStdinPath(text: string, dash = true): boolean {
  if (text === "-") return dash;
  return /(^|\/)dev\/(stdin|fd\/0+)$|(^|\/)proc\/[^/]+\/fd\/0+$/.test(posix.normalize(text));
}

/** A redirection of a simple command: its operator (`<`, `>`, `>>`, `<>`, `>|`, `>&`) and target word. */
export interface Redirect {
  op: string;
  target: ShellWord;
}

/** One simple command: its words, and the here-document it reads, if any. */
export interface SimpleCommand {
  words: ShellWord[];
  /** Its redirections to and from files (not here-documents, not `2>&1`). */
  redirects?: Redirect[];
  /** What the command reads on stdin from a here-document (`<<EOF … EOF`) or a here-string (`<<< 'text'`). */
  heredoc?: ShellWord;
}

/** A command line read: its simple commands (those of substitutions included) or why it could not be read. */
export interface ParsedShell {
  commands: SimpleCommand[];
  /** Why the text could not be read, or null. */
  problem: string | null;
  /**
   * The text inside each `(( … ))` read as an arithmetic command (not after `for`): dash, the `/bin/sh` of Debian and
   * Ubuntu, and other POSIX shells read `((touch x))` as two subshells and run it, so it is read as commands too.
   */
  subshells: string[];
  /** The texts bash evaluates as arithmetic: the inside of each `(( … ))`, `$(( … ))` and `$[ … ]`. */
  arithmetic: string[];
  /** The inside of each `${ … }` (`v@P`, `!v`, `a[i]`): see `evaluated_variables.ts`. */
  parameters: string[];
}

import { posix } from "node:path";
import { isAssignment } from "./shell_assignments.ts";
import { atCommandStart, CaseTracker } from "./shell_case.ts";
import { arithmeticEnd, backquoted, heredocBody, heredocDelimiter, matchedClose } from "./shell_spans.ts";

/** How deep substitutions and `sh -c` scripts may nest before the reader gives up (fail closed). */
export const MAX_SHELL_DEPTH = 8;

const KEYWORDS = new Set(["if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "esac"]);
const OPERATOR_CHARS = new Set([";", "&", "|", "\n"]);

/** A sticky regular expression's match at `index` of `s` (no copy of the rest of the text). */
function at(re: RegExp, s: string, index: number): RegExpExecArray | null {
  re.lastIndex = index;
  return re.exec(s);
}

class Reader {
  i = 0;
  readonly commands: SimpleCommand[] = [];
  /** See `ParsedShell.subshells`. */
  readonly subshells: string[] = [];
  /** See `ParsedShell.arithmetic` and `ParsedShell.parameters`. */
  readonly arithmetic: string[] = [];
  readonly parameters: string[] = [];
  problem: string | null = null;
  /** The `case … esac` commands open here: a pattern's `)` does not end a substitution. */
  readonly #cases = new CaseTracker();
  #words: ShellWord[] = [];
  #word: ShellWord | null = null;
  #skipNext = false;
  #redirectOp = "";
  #heredocs: { delim: string; strip: boolean; expand: boolean; command: SimpleCommand; order: number }[] = [];
  /** Per command, how many redirections of its standard input it has so far: the last one is what it reads. */
  #inputs = new WeakMap<SimpleCommand, number>();
  #current: SimpleCommand = { words: [] };
  #hereString = false;
  /** Where the current word's first unquoted glob (`*`, `?`, `[…]`) or `{` is, in its text. */
  #globAt: number | null = null;
  #braceAt: number | null = null;

  constructor(readonly s: string, readonly depth: number) {}

  /** Reads until the end, or until `stop` (`)`) closes a substitution; returns where it stopped. */
  read(stop: ")" | null): number {
    let parens = 0;
    const s = this.s;
    while (this.i < s.length && this.problem === null) {
      const c = s[this.i];
      if (c === " " || c === "\t") { // not "\r": the shell reads it as a word character (`echo hi\r#; rm x` runs rm)
        this.#flushWord();
        this.i++;
      } else if (c === "#" && this.#word === null) {
        while (this.i < s.length && s[this.i] !== "\n") this.i++;
      } else if (c === ";" && /[;&]/.test(s[this.i + 1] ?? "") && this.#caseItemEnd()) {
        continue;
      } else if (c === "|" && this.#cases.inPattern) {
        this.#flushWord(); // `a|b)`: one pattern list
        this.#cases.patternGoesOn();
        this.i++;
      } else if (OPERATOR_CHARS.has(c)) {
        this.#flushCommand();
        // A `;` or `&` in a case's own syntax, or a newline inside a pattern list: no case to bash, commands to dash.
        if ((c !== "\n" && this.#cases.inSyntax) || (c === "\n" && this.#cases.midPattern)) {
          this.#fail("a case whose syntax bash and dash read apart (its word, in, a pattern list)");
          continue;
        }
        if (c === "\n") this.#readHeredocs();
        this.i++;
      } else if (c === ")") {
        this.#flushWord();
        if (this.#cases.closesPattern()) {
          this.#flushCommand();
          this.i++;
          continue;
        }
        if (parens === 0 && stop === ")") {
          if (this.#cases.open || this.#unfollowedCase) {
            this.#fail('a ")" inside case … esac in a substitution that the reader cannot follow');
          }
          return this.#end();
        }
        this.#flushCommand();
        parens = Math.max(0, parens - 1);
        this.i++;
      } else if (c === "(" && this.#word === null && this.#cases.inPattern) {
        this.#cases.patternGoesOn();
        this.i++; // `case x in (x) …`: the pattern's optional opening parenthesis
      } else if (c === "(" && s[this.i + 1] === "(" && this.#word === null && this.#arithmeticCommand()) {
        continue;
      } else if (c === "(") {
        this.#flushCommand();
        parens++;
        this.i++;
      } else if ((c === "<" || c === ">") && this.#isRedirectStart()) {
        this.#redirect();
      } else this.#wordChar(stop);
    }
    if (this.problem === null && stop !== null) this.problem = "unterminated $(";
    this.#flushCommand();
    if (this.problem === null && this.#cases.open) this.problem = "a case not closed by esac";
    return this.i;
  }

  /** `;;`, `;&` or `;;&` ending a case item (then the next pattern follows); false when no `case` is open. */
  #caseItemEnd(): boolean {
    this.#flushCommand();
    if (!this.#cases.endsItem()) return false;
    this.i += at(/;;&|;;|;&/y, this.s, this.i)![0].length;
    return true;
  }

  /**
   * `(( … ))` where a command starts (also `for (( … ))`, `if (( … ))`): an arithmetic command, whose `<<` is a
   * shift, not a here-document; only its substitutions run. False when the `((` opens subshells (`((rm x); (ls))`).
   */
  #arithmeticCommand(): boolean {
    if (!this.#words.every((w) => !w.dynamic && (w.text === "for" || isKeyword(w.text)))) return false;
    const span = arithmeticEnd(this.s, this.i);
    if (span.problem !== undefined) {
      this.#fail(span.problem);
      return true;
    }
    if (span.end === -1) return false;
    const inner = this.s.slice(this.i + 2, span.end - 1);
    this.arithmetic.push(inner);
    if (/[$`]/.test(inner)) this.#expansionsOf(inner); // (( a[$(git push)] )) runs it
    if (!this.#words.some((w) => w.text === "for")) this.subshells.push(inner); // dash: ((touch x)) runs touch
    this.#words = [];
    this.#flushCommand();
    this.i = span.end + 1;
    return true;
  }

  #end(): number {
    this.#flushCommand();
    return this.i;
  }

  #open(): ShellWord {
    if (this.#word === null) this.#wordStart = this.i;
    return this.#word ??= { text: "", dynamic: false, literal: "" };
  }

  /** Where the word being read starts in the line (its quotes included). */
  #wordStart = 0;
  /** The `{NAME}` words bash read as descriptors in this command, where they stand among its words (for dash). */
  #dashWords: { word: ShellWord; index: number }[] = [];
  /** Where this command's array assignments (`a[0]=1`) stand among its words: commands to dash. */
  #dashArrays = new Set<number>();
  /** Whether a `case WORD in` was read here that opened no case (see `#flushWord`). */
  #unfollowedCase = false;
  /** The words read as written, unquoted (a keyword counts only so). */
  #plain = new WeakSet<ShellWord>();

  #add(text: string): void {
    const w = this.#open();
    w.text += text;
    if (!w.dynamic) w.literal += text;
  }

  #addDynamic(text: string): void {
    const w = this.#open();
    w.text += text;
    w.dynamic = true;
  }

  #flushWord(): void {
    if (this.#word === null) return;
    const w = this.#word;
    let at = this.#globAt;
    if (this.#braceAt !== null && /\{[^{}]*(,|\.\.)[^{}]*\}/.test(w.text.slice(this.#braceAt))) {
      at = Math.min(at ?? Infinity, this.#braceAt);
    }
    const word = !this.#hereString && !this.#skipNext;
    // The word as written: a keyword (`case`, `in`, `esac`) or an assignment's name and `=` count only unquoted.
    // (line continuations go before the shell reads words: `es\<newline>ac` is `esac`)
    const raw = this.s.slice(this.#wordStart, this.i).replaceAll("\\\n", "");
    if (isAssignment(w.text) && !/^[A-Za-z_][A-Za-z0-9_]*(?:\[|\+?=)/.test(raw)) w.notAssignment = true;
    // bash reads a `NAME[` word up to its matching `]`, across spaces and quotes (`a[ ]=1 rm x` runs rm): unreadable.
    if (
      word && /^[A-Za-z_][A-Za-z0-9_]*\[/.test(raw) && this.#assignmentPosition() &&
      (!raw.includes("]") || (raw.match(/"[^"]*"|'[^']*'/g) ?? []).some((q) => q.includes("]")))
    ) {
      return this.#fail("an array subscript holding a space or a quoted ] before the command (bash reads it whole)");
    }
    // An assignment before the command (`a[0]=1 rm x`, `X=*`): the shell expands no glob or brace in it.
    const assignment = word && isAssignment(w.text) && !w.notAssignment && this.#assignmentPosition();
    if (assignment) at = null;
    // dash has no arrays: to it `a[0]=…` is a word (a glob), the command when it comes first: read that way too.
    if (assignment && w.text.includes("[")) this.#dashArrays.add(this.#words.length);
    const plain = !w.dynamic && raw === w.text;
    if (plain) this.#plain.add(w);
    // A keyword only where a command starts: no quoted word, no redirection and no dash word before it.
    const redirected = this.#current.redirects !== undefined || this.#current.heredoc !== undefined ||
      this.#dashWords.length > 0;
    const before = [...(redirected ? [null] : []), ...this.#words.map((x) => this.#plain.has(x) ? x.text : null)];
    // After `time` or `coproc`, `case` is a keyword to bash and a word to dash, which then reads `|`, a newline and
    // `)` as its own: no one reading holds, unreadable.
    if (
      word && plain && w.text === "case" && before.length > 0 && before.every((b) => b !== null) &&
      ["time", "coproc"].includes(before.findLast((b) => b !== "-p" && b !== "--") ?? "")
    ) {
      return this.#fail("a case after time or coproc (a keyword to bash, words to dash)");
    }
    const caseWord = word && this.#cases.word(plain ? w.text : null, atCommandStart(before, isKeyword));
    // `case WORD in` that opened no case here (after `function f {`, `coproc NAME {`, …): its patterns' `)` would end
    // a substitution where the shell goes on: such a substitution is unreadable.
    if (!caseWord && plain && w.text === "in" && before.at(-2) === "case") this.#unfollowedCase = true;
    if (this.#cases.broken) {
      return this.#fail("a case whose syntax bash and dash read apart (its word, in, a pattern list)");
    }
    if (caseWord) {
      this.#globAt = this.#braceAt = this.#word = null; // `case WORD in`, a pattern, `esac`: no command
      return;
    }
    if (at !== null) {
      // The shell expands it into words we cannot know here: only its text before the pattern is literal.
      w.literal = w.text.slice(0, w.dynamic ? Math.min(w.literal.length, at) : at);
      w.dynamic = true;
    }
    this.#globAt = this.#braceAt = null;
    if (this.#hereString) {
      this.#current.heredoc = w;
      this.#hereString = false;
    } else if (this.#skipNext) {
      this.#skipNext = false;
      // A file given to its input after a here-document or here-string: it reads the file.
      if (this.#redirectOp === "<" || this.#redirectOp === "<>") delete this.#current.heredoc;
      (this.#current.redirects ??= []).push({ op: this.#redirectOp, target: w });
    } else this.#words.push(w);
    this.#word = null;
  }

  /** Whether a word here stands before the command: only assignments and keywords before it in its command. */
  #assignmentPosition(): boolean {
    return this.#words.every((x) => (isAssignment(x.text) && !x.notAssignment) || isKeyword(x.text));
  }

  #flushCommand(): void {
    this.#flushWord();
    if (this.#words.length > 0 || this.#current.redirects) {
      this.#current.words = this.#words;
      this.commands.push(this.#current);
    }
    if (this.#dashWords.length > 0 || this.#dashArrays.size > 0) {
      // The same command as dash reads it: its `{NAME}` words kept where they were, its array assignments words.
      const words = this.#words.map((w, k) => this.#dashArrays.has(k) ? { ...w, notAssignment: true } : w);
      for (const { word, index } of this.#dashWords.toReversed()) words.splice(index, 0, word);
      this.commands.push({ ...this.#current, words });
      this.#dashWords = [];
      this.#dashArrays.clear();
    }
    this.#words = [];
    this.#current = { words: [] };
    this.#skipNext = this.#hereString = false;
  }

  /** An unquoted `<` or `>` starts a redirection (`echo x>f` too: it ends the word) unless it is `<(` / `>(`. */
  #isRedirectStart(): boolean {
    return this.s[this.i + 1] !== "(";
  }

  #redirect(): void {
    // "2>", "2>&1" and bash's "{fd}>": a word of digits or an unquoted {NAME} before the operator is the file
    // descriptor, not a word (`{fd}>/dev/null rm x` runs rm).
    let fd: string | null = null;
    if (this.#isDescriptor()) {
      fd = this.#word!.text;
      // dash has no named descriptors: to it `{fd}` is a word (`{fd}>/dev/null x` runs a program `{fd}`), read too.
      if (this.#word!.text.startsWith("{")) this.#dashWords.push({ word: this.#word!, index: this.#words.length });
      this.#word = null;
      this.#globAt = this.#braceAt = null;
    } else this.#flushWord();
    const s = this.s;
    const op = at(/(<<<|<<-|<<|<>|<&|>>|>&|>\||<|>)/y, s, this.i)![1];
    this.i += op.length;
    const input = op.startsWith("<") && (fd === null || /^0+$/.test(fd)) ? this.#inputNumber() : 0;
    if (op === "<&" && input > 0) delete this.#current.heredoc; // `<&3`: what it reads is not known here
    if (op === "<<" || op === "<<-") {
      while (s[this.i] === " " || s[this.i] === "\t") this.i++;
      const word = heredocDelimiter(s, this.i); // a shell word: `<<E\ F` ends at a line `E F`
      if ("problem" in word) return this.#fail(word.problem);
      this.i = word.end;
      this.#heredocs.push({
        delim: word.delim,
        strip: op === "<<-",
        expand: !word.quoted,
        command: this.#current,
        order: input,
      });
      return;
    }
    if (op === "<<<") {
      this.#hereString = true; // the next word is what the command reads
      return;
    }
    if ((op === ">&" || op === "<&") && /[-\d]/.test(s[this.i] ?? "")) {
      while (/[-\d]/.test(s[this.i] ?? "")) this.i++;
      return;
    }
    if (s[this.i] === "&" && op === ">") this.i++;
    this.#redirectOp = op;
    this.#skipNext = true; // the target word
  }

  /** Counts a redirection of the current command's standard input; returns its number (from 1). */
  #inputNumber(): number {
    const n = (this.#inputs.get(this.#current) ?? 0) + 1;
    this.#inputs.set(this.#current, n);
    return n;
  }

  /** Whether the word before a redirection's operator names its file descriptor (`2>`, `{fd}>`). */
  #isDescriptor(): boolean {
    const w = this.#word;
    if (w === null || w.dynamic) return false;
    if (/^\d+$/.test(w.text)) return true;
    return /^\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(w.text) && this.s.slice(this.i - w.text.length, this.i) === w.text;
  }

  /** After a newline: the bodies of the here-documents opened on the line, up to their delimiters. */
  #readHeredocs(): void {
    for (const h of this.#heredocs) {
      const { body, next } = heredocBody(this.s, this.i + 1, h.delim, h.strip, false);
      // bash joins a line ending in "\" with the next before it compares it with an unquoted delimiter; dash does not.
      if (h.expand && heredocBody(this.s, this.i + 1, h.delim, h.strip, true).next !== next) {
        return this.#fail("a here-document whose end depends on the shell (a line ending in \\ before its delimiter)");
      }
      this.i = next - 1;
      // With an unquoted delimiter, the shell expands the body: its substitutions run (even when it is not read).
      const doc = h.expand && /[$`\\]/.test(body)
        ? this.#expansionsOf(body)
        : { text: body, dynamic: false, literal: body };
      // Another redirection of its input after this one (`bash <<A <<<'…'`, `<<A <f`): the command reads that.
      if (h.order === 0 || h.order === this.#inputs.get(h.command)) h.command.heredoc = doc;
    }
    this.#heredocs = [];
  }

  #wordChar(stop: ")" | null): void {
    const s = this.s, c = s[this.i];
    if (c === "\\") {
      if (s[this.i + 1] === "\n") this.i += 2; // line continuation
      else {
        this.#add(s[this.i + 1] ?? "");
        this.i += 2;
      }
    } else if (c === "'") {
      const end = s.indexOf("'", this.i + 1);
      if (end === -1) return this.#fail("unterminated single quote");
      this.#add(s.slice(this.i + 1, end));
      this.i = end + 1;
    } else if (c === '"') {
      this.#doubleQuoted();
    } else if (c === "$") {
      this.#dollar(stop);
    } else if (c === "`") {
      this.#backquoted(false);
    } else if ((c === "<" || c === ">") && s[this.i + 1] === "(") {
      this.i += 1;
      this.#substitution(")", this.i - 1);
    } else if ("@!+?*".includes(c) && s[this.i + 1] === "(") {
      this.#extendedGlob();
    } else {
      if (
        (c === "*" || c === "?" || c === "[" && /^\[[^\s;&|<>()'"]*\]/.test(s.slice(this.i, this.i + 256))) &&
        this.#globAt === null
      ) {
        this.#globAt = this.#open().text.length;
      }
      if (c === "{" && this.#braceAt === null) this.#braceAt = this.#open().text.length;
      this.#add(c);
      this.i++;
    }
  }

  /**
   * bash's extended glob (`@(…)`, `!(…)`, `+(…)`, `?(…)`, `*(…)`, with `shopt -s extglob`): one word, a glob from
   * there on (`/bin/@(r)m` is unknown), whose substitutions run. Without extglob bash and dash refuse it.
   */
  #extendedGlob(): void {
    const s = this.s;
    const span = matchedClose(s, this.i + 1, "(", ")", "an extended glob");
    if (span.problem !== undefined) return this.#fail(span.problem);
    const inner = s.slice(this.i + 2, span.end);
    if (/[$`]/.test(inner)) this.#expansionsOf(inner);
    this.#globAt ??= this.#open().text.length;
    this.#add(s.slice(this.i, span.end + 1));
    this.i = span.end + 1;
  }

  /** Takes in what a nested reader read: its commands, subshells and evaluated texts. */
  #adopt(inner: Reader): void {
    this.commands.push(...inner.commands);
    this.subshells.push(...inner.subshells);
    this.arithmetic.push(...inner.arithmetic);
    this.parameters.push(...inner.parameters);
  }

  /** Reads the substitutions of a text the shell expands without splitting (a here-document, `${X:-…}`). */
  #expansionsOf(text: string): ShellWord {
    if (this.depth + 1 > MAX_SHELL_DEPTH) {
      this.#fail(`expansions nested deeper than ${MAX_SHELL_DEPTH}`);
      return { text, dynamic: true, literal: "" };
    }
    const inner = new Reader(text, this.depth + 1);
    inner.expansions();
    if (inner.problem !== null) this.#fail(inner.problem);
    this.#adopt(inner);
    // What the shell makes of it: `\$` is `$`, `\\` is `\` (so `sh <<EOF` reads `\$'\x67it'` as `$'\x67it'`).
    const word = inner.#word ?? { text: "", dynamic: false, literal: "" };
    return { text: word.text, dynamic: word.dynamic, literal: word.literal };
  }

  /** Walks the text as the inside of double quotes: only its expansions count. */
  expansions(): void {
    const s = this.s;
    while (this.i < s.length && this.problem === null) {
      const c = s[this.i];
      if (c === "\\" && /[$`\\\n]/.test(s[this.i + 1] ?? "")) {
        if (s[this.i + 1] !== "\n") this.#add(s[this.i + 1]);
        this.i += 2;
      } else if (c === "$") this.#dollar(null, true);
      else if (c === "`") this.#backquoted(false);
      else {
        this.#add(c);
        this.i++;
      }
    }
  }

  #fail(problem: string): void {
    this.problem = problem;
    this.i = this.s.length;
  }

  #doubleQuoted(): void {
    const s = this.s;
    this.#open();
    this.i++;
    while (this.i < s.length && s[this.i] !== '"' && this.problem === null) {
      const c = s[this.i];
      if (c === "\\" && /["\\$`\n]/.test(s[this.i + 1] ?? "")) {
        if (s[this.i + 1] !== "\n") this.#add(s[this.i + 1]);
        this.i += 2;
      } else if (c === "$") this.#dollar(null, true);
      else if (c === "`") this.#backquoted(true);
      else {
        this.#add(c);
        this.i++;
      }
    }
    if (this.problem !== null) return;
    if (s[this.i] !== '"') return this.#fail("unterminated double quote");
    this.i++;
  }

  #dollar(_stop: ")" | null, quoted = false): void {
    const s = this.s, next = s[this.i + 1] ?? "";
    if (next === "(" && s[this.i + 2] === "(") return this.#arithmetic();
    if (next === "(") {
      this.i += 1;
      return this.#substitution(")", this.i - 1);
    }
    if (next === "'" && !quoted) return this.#ansiC();
    if (next === '"' && !quoted) {
      // `$"…"`: a locale-translated string, read as a double-quoted one (`$"git" push` is `git push`).
      this.i++;
      return this.#doubleQuoted();
    }
    if (next === "[" && this.#oldArithmetic(quoted)) return;
    if (next === "{") {
      const span = matchedClose(s, this.i + 1, "{", "}", "${…}"); // `${X:-"}"}`: where it ends is the shell's guess
      if (span.problem !== undefined) return this.#fail(span.problem);
      const end = span.end;
      const inner = s.slice(this.i + 2, end);
      this.parameters.push(inner);
      if (/[$`]/.test(inner)) this.#expansionsOf(inner); // ${X:-$(git push)} runs it
      this.#addDynamic(s.slice(this.i, end + 1));
      this.i = end + 1;
      return;
    }
    const m = at(/\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])/y, s, this.i);
    if (m) {
      this.#addDynamic(m[0]);
      this.i += m[0].length;
      return;
    }
    this.#add("$");
    this.i++;
  }

  /**
   * bash's old arithmetic `$[ … ]`: its text is evaluated (recorded), and since dash reads `$[` as text, the line is
   * read on as dash reads it (false). A `<<` inside is a shift to bash and a here-document to dash, which then read
   * the next lines differently: unreadable (true).
   */
  #oldArithmetic(quoted: boolean): boolean {
    const s = this.s;
    const span = matchedClose(s, this.i + 1, "[", "]", "$[…]");
    if (span.end !== undefined) this.arithmetic.push(s.slice(this.i + 2, span.end));
    if (quoted || !s.slice(this.i + 2, span.end ?? s.length).includes("<<")) return false;
    this.#fail('a "<<" inside $[ … ] (a shift to bash, a here-document to dash)');
    return true;
  }

  /** `$(( … ))`, or `$( (…) … )` when the `((` does not close as arithmetic (`$((rm x); echo)` runs rm, in bash). */
  #arithmetic(): void {
    const s = this.s;
    const span = arithmeticEnd(s, this.i + 1);
    if (span.problem !== undefined) {
      return this.#fail(span.problem === "unterminated ((…))" ? "unterminated $((" : span.problem);
    }
    if (span.end === -1) {
      this.i += 1;
      return this.#substitution(")", this.i - 1);
    }
    const j = span.end;
    const inner = s.slice(this.i + 3, j - 1);
    this.arithmetic.push(inner);
    if (/[$`]/.test(inner)) this.#expansionsOf(inner); // $(( $(git push) )) runs it
    this.#addDynamic(s.slice(this.i, j + 1));
    this.i = j + 1;
  }

  /**
   * `$'…'`: ANSI-C quoting, its escapes decoded (`$'\x67it'` is `git`, `$'\cA'` is U+0001); a NUL ends what bash keeps
   * of it (`$'rm\0foo'` is `rm`).
   */
  #ansiC(): void {
    const s = this.s;
    let j = this.i + 2, out = "";
    let nul = -1;
    const simple: Record<string, string> = {
      n: "\n",
      t: "\t",
      r: "\r",
      a: "\x07",
      b: "\b",
      e: "\x1b",
      f: "\f",
      v: "\v",
    };
    for (; j < s.length && s[j] !== "'"; j++) {
      if (s[j] !== "\\") {
        out += s[j];
        continue;
      }
      const e = s[++j] ?? "";
      // dash (the shell adapter's /bin/sh on Debian) has no $'…': it ends the quote at this ' and runs what follows.
      if (e === "'") return this.#fail("a $'…' holding \\' (bash and dash do not agree where it ends)");
      const hex = at(/x([0-9a-fA-F]{1,2})/y, s, j);
      const oct = at(/([0-7]{1,3})/y, s, j);
      const uni = at(/u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8})/y, s, j); // as bash: \u takes 4 digits at most
      const ctl = at(/c([\s\S])/y, s, j);
      if (hex) [out, j] = [out + String.fromCharCode(parseInt(hex[1], 16)), j + hex[0].length - 1];
      else if (uni) {
        [out, j] = [out + String.fromCodePoint(parseInt(uni[1] ?? uni[2], 16) % 0x110000), j + uni[0].length - 1];
      } else if (oct) [out, j] = [out + String.fromCharCode(parseInt(oct[1], 8)), j + oct[0].length - 1];
      else if (ctl && ctl[1] !== "'") {
        const c = ctl[1] === "?" ? 0x7f : ctl[1].toUpperCase().charCodeAt(0) & 0x1f;
        [out, j] = [out + String.fromCharCode(c), j + 1];
      } else out += simple[e] ?? e;
      if (nul === -1 && out.includes("\0")) nul = out.indexOf("\0");
    }
    if (j >= s.length) return this.#fail("unterminated $'");
    this.#add(nul === -1 ? out : out.slice(0, nul));
    this.i = j + 1;
  }

  /**
   * `` `…` ``: its text loses the backslashes of `` \` ``, `\\` and `\$` first (as the shell does), then is read as a
   * command line of its own, so `` `echo \`rm x\`` `` runs `rm x`.
   */
  #backquoted(inDoubleQuotes: boolean): void {
    if (this.depth + 1 > MAX_SHELL_DEPTH) return this.#fail(`substitutions nested deeper than ${MAX_SHELL_DEPTH}`);
    const found = backquoted(this.s, this.i, inDoubleQuotes);
    if ("problem" in found) return this.#fail(found.problem);
    const inner = new Reader(found.text, this.depth + 1);
    inner.read(null);
    if (inner.problem !== null) return this.#fail(inner.problem);
    this.#adopt(inner);
    this.#addDynamic(this.s.slice(this.i, found.end + 1));
    this.i = found.end + 1;
  }

  /** `$( … )` or `<( … )`: the commands inside are read as commands of their own. */
  #substitution(close: ")", start = this.i): void {
    if (this.depth + 1 > MAX_SHELL_DEPTH) return this.#fail(`substitutions nested deeper than ${MAX_SHELL_DEPTH}`);
    const inner = new Reader(this.s, this.depth + 1);
    inner.i = this.i + 1;
    const end = inner.read(close);
    if (inner.problem !== null) return this.#fail(inner.problem);
    this.#adopt(inner);
    this.#addDynamic(this.s.slice(start, end + 1));
    this.i = end + 1;
  }
}

/**
 * Reads a shell command line into the simple commands it runs.
 *
 * @example
 * ```ts
 * import { parseShell } from "./shell.ts";
 * parseShell("cd x && 'git' push").commands.map((c) => c.words.map((w) => w.text).join(" ")); // ["cd x", "git push"]
 * ```
 */
export function parseShell(text: string, depth = 0): ParsedShell {
  if (depth > MAX_SHELL_DEPTH) {
    return {
      commands: [],
      problem: `scripts nested deeper than ${MAX_SHELL_DEPTH}`,
      subshells: [],
      arithmetic: [],
      parameters: [],
    };
  }
  const reader = new Reader(text, depth);
  reader.read(null);
  const { commands, problem, subshells, arithmetic, parameters } = reader;
  return { commands, problem, subshells, arithmetic, parameters };
}

/**
 * Whether a word is a shell keyword that only introduces the command after it (`then git push`).
 *
 * @example
 * ```ts
 * import { isKeyword } from "./shell.ts";
 * isKeyword("do"); // true
 * ```
 */
export function isKeyword(word: string): boolean {
  return KEYWORDS.has(word);
}

/**
 * Words joined into one script word (dynamic when any of them is; its literal up to the first dynamic part).
 *
 * @example
 * ```ts
 * import { joinWords } from "./shell.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * joinWords([w("git"), w("push")]).text; // "git push"
 * ```
 */
export function joinWords(words: readonly ShellWord[]): ShellWord {
  const dynamic = words.some((w) => w.dynamic);
  const text = words.map((w) => w.text).join(" ");
  const firstDynamic = words.findIndex((w) => w.dynamic);
  const literal = dynamic
    ? [...words.slice(0, firstDynamic).map((w) => w.text), words[firstDynamic].literal].join(" ")
    : text;
  return { text, dynamic, literal };
}

/**
 * A word known as written (no expansion in it).
 *
 * @example
 * ```ts
 * import { literalWord } from "./shell.ts";
 * literalWord("git").literal; // "git"
 * ```
 */
export function literalWord(text: string): ShellWord {
  return { text, dynamic: false, literal: text };
}

/**
 * The word from `at` on (`-f/x` → `/x`), still dynamic when its expansion lies after `at`.
 *
 * @example
 * ```ts
 * import { literalWord, wordFrom } from "./shell.ts";
 * wordFrom(literalWord("--exec=git push"), 7).text; // "git push"
 * ```
 */
export function wordFrom(w: ShellWord, at: number): ShellWord {
  const text = w.text.slice(at);
  if (!w.dynamic) return literalWord(text);
  return { text, dynamic: true, literal: w.literal.slice(at) };
}

/** Arguments only known when the command runs (`xargs` adds them from its input, an alias gets them where used). */
export const UNKNOWN_ARGUMENTS: ShellWord = Object.freeze({ text: "…", dynamic: true, literal: "" });
