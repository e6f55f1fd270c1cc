/**
 * Scripts a command line writes and then runs: `echo 'git push' > p.sh && sh p.sh`, `printf … > x.py; python3
 * x.py`, `cat > run.sh <<EOF … EOF; ./run.sh`, `curl … > x.sh && bash x.sh`. `unwrap.ts` records what each command
 * writes through a redirection (the text, when `echo`, `printf`, or `cat`/`tee` of a here-document writes it; else
 * unknown), and when the line runs that file (a shell, `source`, a path run as a program, an interpreter's program
 * file, make's makefile) reads the text as it would read the script or code given inline, or fails closed on text
 * it cannot know. A program `cp`, `mv`, `ln` or `install` puts under another name is the source's program when the
 * line runs it (`cp /usr/bin/git gp && ./gp push`). A file the line did not write is not read (docs/rules.md).
 *
 * @module
 */
import { posix } from "node:path";
import type { ShellWord, SimpleCommand } from "./shell.ts";

/** What a line wrote to a file: the text (null: unknown), by path as written (normalised). */
export type Written = Map<string, string | null>;

/** A path as written, normalised for comparison (`./p.sh` and `p.sh` and `x/../p.sh` are one). */
export function scriptKey(path: string): string {
  return posix.normalize(path).replace(/^\.\//, "");
}

/** The text `echo` writes, or null when part of it is only known when it runs. */
function echoText(args: readonly ShellWord[]): string | null {
  let k = 0, escapes = false;
  while (k < args.length && /^-[neE]+$/.test(args[k].text)) escapes ||= args[k++].text.includes("e");
  if (args.slice(k).some((w) => w.dynamic)) return null;
  const text = args.slice(k).map((w) => w.text).join(" ") + "\n";
  return escapes ? unescape(text) : text;
}

/** `printf`'s escapes (and echo -e's): `\n`, `\t`, `\\`; a format with a conversion is unknown here. */
function unescape(text: string): string {
  return text.replace(/\\([ntr\\'"])/g, (_, c) => c === "n" ? "\n" : c === "t" ? "\t" : c === "r" ? "\r" : c);
}

/** The text a command writes to its standard output, when it is known: echo, printf FORMAT, cat/tee of its input. */
function outputText(c: SimpleCommand): string | null {
  const [program, ...args] = c.words;
  if (program === undefined || program.dynamic) return null;
  const name = posix.basename(program.text);
  if (name === "echo") return echoText(args);
  if (name === "printf") {
    const format = args[0];
    return format !== undefined && !format.dynamic && args.length === 1 && !format.text.includes("%")
      ? unescape(format.text)
      : null;
  }
  if ((name === "cat" || name === "tee") && c.heredoc !== undefined && !c.heredoc.dynamic) {
    return name === "cat" && args.some((w) => w.text !== "-") ? null : c.heredoc.text;
  }
  return null;
}

/**
 * Records what a command writes to files: through `>`, `>>`, `&>` redirections, and `tee FILE` of a here-document;
 * an append to unknown or known text, a write of unknown text. Targets only known when the line runs are not
 * recorded (what runs them has an unknown name too).
 *
 * @example
 * ```ts
 * import { recordWrites, type Written } from "./written_scripts.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * const written: Written = new Map();
 * recordWrites({ words: ["echo", "git", "push"].map(w), redirects: [{ op: ">", target: w("p.sh") }] }, written);
 * written.get("p.sh"); // "git push\n"
 * ```
 */
export function recordWrites(c: SimpleCommand, written: Written): void {
  const targets: { path: ShellWord; append: boolean }[] = (c.redirects ?? [])
    .filter((r) => /^(>|>\||>>|&>|&>>)$/.test(r.op))
    .map((r) => ({ path: r.target, append: r.op.endsWith(">>") }));
  const program = c.words[0];
  if (program !== undefined && !program.dynamic && posix.basename(program.text) === "tee") {
    const append = c.words.some((w) => /^(-a|--append)$/.test(w.text));
    for (const w of c.words.slice(1)) if (!w.text.startsWith("-")) targets.push({ path: w, append });
  }
  if (targets.length === 0) return;
  const text = outputText(c);
  for (const { path, append } of targets) {
    if (path.dynamic) continue;
    const key = scriptKey(path.text);
    const before = written.get(key);
    written.set(key, append && before !== undefined ? (before === null || text === null ? null : before + text) : text);
  }
}

/**
 * The text of a file the line wrote, as a shell word to read (dynamic when unknown), or undefined when the line did
 * not write it.
 *
 * @example
 * ```ts
 * import { writtenText } from "./written_scripts.ts";
 * writtenText(new Map([["p.sh", "git push\n"]]), "./p.sh")?.text; // "git push\n"
 * ```
 */
export function writtenText(written: Written, path: string): ShellWord | undefined {
  if (written.size === 0) return undefined;
  const key = scriptKey(path);
  if (!written.has(key)) return undefined;
  const text = written.get(key)!;
  return text === null
    ? { text: `(what this line wrote to ${path})`, dynamic: true, literal: "" }
    : { text, dynamic: false, literal: text };
}

/** The program a script's first line names (`#!/usr/bin/env python3` → `python3`), or null when it has none. */
export function shebangProgram(text: string): string | null {
  const m = /^#!\s*(\S+)(?:[ \t]+(?:-\S+[ \t]+)*(\S+))?/.exec(text);
  if (m === null) return null;
  const first = posix.basename(m[1]);
  return first === "env" && m[2] !== undefined ? posix.basename(m[2]) : first;
}

/** Programs a line copied or linked under another name: by path as written (normalised), and by bare name. */
export type Copies = Map<string, string | null>;

/** The value options of `cp`, `mv`, `ln` and `install` (the target folder is read apart). */
const COPY_VALUES = /^(-S|--suffix|-m|--mode|-o|--owner|-g|--group|-Z|--context|--backup|--sparse|--reflink)$/;

/**
 * Records a program `cp`, `mv`, `ln` or `install` puts under another name (`cp /usr/bin/git gp`, `ln -s "$(which
 * git)" gp`): the copy's path and name stand for the source's program (null: a source only known when it runs); a
 * script the line wrote keeps its text under the new name.
 *
 * @example
 * ```ts
 * import { type Copies, recordCopies } from "./written_scripts.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * const copies: Copies = new Map();
 * recordCopies(["cp", "/usr/bin/git", "gp"].map(w), new Map(), copies);
 * copies.get("gp"); // "git"
 * ```
 */
export function recordCopies(words: readonly ShellWord[], written: Written, copies: Copies): void {
  const program = words[0];
  if (program === undefined || program.dynamic || !/^(cp|mv|ln|install)$/.test(posix.basename(program.text))) return;
  const operands: ShellWord[] = [];
  let folder: ShellWord | undefined;
  for (let k = 1; k < words.length; k++) {
    const t = words[k].text;
    if (t === "-t" || t === "--target-directory") folder = words[++k];
    else if (t.startsWith("--target-directory=")) folder = { ...words[k], text: t.slice(19) };
    else if (COPY_VALUES.test(t)) k++;
    else if (!t.startsWith("-") || t === "-") operands.push(words[k]);
  }
  const target = folder ?? (operands.length > 1 ? operands.pop() : undefined);
  if (target === undefined || target.dynamic) return;
  for (const source of operands) {
    const name = source.dynamic ? null : posix.basename(source.text);
    // Copied into a folder, it keeps its name there: both the target and target/name stand for it.
    for (
      const path of folder ? [posix.join(target.text, name ?? "")] : [target.text, posix.join(target.text, name ?? "")]
    ) {
      const key = scriptKey(path);
      const from = source.dynamic ? undefined : copies.get(scriptKey(source.text));
      copies.set(key, from !== undefined ? from : name);
      copies.set(`name:${posix.basename(key)}`, from !== undefined ? from : name);
      const text = source.dynamic ? undefined : written.get(scriptKey(source.text));
      if (text !== undefined) written.set(key, text);
    }
  }
}

/**
 * The program a command word runs when the line copied one to it: its name, null when the source is only known when
 * the line runs, undefined when the line copied nothing there.
 *
 * @example
 * ```ts
 * import { copiedProgram } from "./written_scripts.ts";
 * copiedProgram(new Map([["gp", "git"], ["name:gp", "git"]]), "./gp"); // "git"
 * ```
 */
export function copiedProgram(copies: Copies, word: string): string | null | undefined {
  if (copies.size === 0) return undefined;
  return copies.get(word.includes("/") ? scriptKey(word) : `name:${word}`);
}
