/**
 * Files a command line writes and then runs: `echo 'git push' > p.sh && sh p.sh`, `printf … > x.py; python3 x.py`,
 * `cat > run.sh <<EOF … EOF; ./run.sh`, `curl … > x.sh && bash x.sh`. `unwrap.ts` records what each command writes
 * (through a redirection or `tee`: the text when `echo`, `printf` or `cat` of a here-document writes it, as bash and
 * dash each write it, see `written_text.ts`; through any other program `file_commands.ts` knows to write a file,
 * `sort -o`, `dd of=`, `sed -i`: unknown), and when the line runs such a file (a shell, `source`, a path run as a
 * program, an interpreter's program file, make's makefile, and what `written_runs.ts` lists) it reads the text as it
 * would read the script or code given inline, or fails closed on text it cannot know.
 *
 * Which file a path names is followed as far as the line shows it: the folders its `cd`s may lead to, the links and
 * copies it makes (`ln -s s t; echo … > t; sh s`), a `PATH` it sets (`PATH=.:$PATH ls`). A loop, a function or a
 * pipeline may run a command before one written earlier on the line, so every text a path is given anywhere on the
 * line is read, whatever the order: `unwrap.ts` reads the line again until it learns no more writes. A program `cp`,
 * `mv`, `ln` or `install` puts under another name is the source's program when the line runs it (`cp /usr/bin/git
 * gp && ./gp push`). A file the line did not write is not read (docs/rules.md).
 *
 * @module
 */
import { posix } from "node:path";
import { type ShellWord, type SimpleCommand, wordFrom } from "./shell.ts";
import { FILE_COMMANDS } from "./file_commands.ts";
import { outputTexts } from "./written_text.ts";

/** One text a line gives a file. */
interface Write {
  /** The path as written, normalised; for a target only known when it runs, its known last part (or ""). */
  path: string;
  /** The text (null: unknown). */
  text: string | null;
  /** The folder and all it holds (`tar -x -C dir`). */
  tree?: boolean;
  /** A target only known when it runs (`> "$F"`): it may be any file whose name ends in `path`. */
  anywhere?: boolean;
  /** Counts only when the line writes some other file too (`cp "$X" s`: X may be one the line wrote). */
  conditional?: boolean;
}

/** Two paths that name one file's text: a copy (`from` → `to`), or a link (both ways). */
interface Link {
  from: string;
  to: string;
  both: boolean;
}

/** What a line writes to files, and what tells which file a path names. Made by {@link newWritten}. */
export interface Written {
  /** Every text each path is given on the line, whatever the order. */
  writes: Map<string, Write>;
  /** The text of each path so far in the line's order (what `>>` appends to). */
  current: Map<string, string | null>;
  links: Map<string, Link>;
  /** The folders the line's commands may run in, relative to where it starts (""); null: one only known then. */
  cwds: (string | null)[];
  /** The folders the command being read may run in, in the line's order so far (`cwds` gathers them all). */
  here: (string | null)[];
  /** The folders a `PATH` the line sets names ("" the current one); `pathUnknown`: a part only known when it runs. */
  pathDirs: Set<string>;
  pathUnknown: boolean;
  /** Files `BASH_ENV` or `ENV` name: a shell started with them runs them. */
  envFiles: Set<string>;
  /** Folders `core.hooksPath` names: git runs the hooks there. */
  hooksDirs: Set<string>;
  /** A link or copy made to or from a path only known when it runs: a written text may be under any name. */
  wild: boolean;
  /** Whether the line may run a command more than once (a loop, a function): what `>>` appends is unknown. */
  repeats: boolean;
  /** What has been read indirectly already in this reading of the line (`written_runs.ts`), once each. */
  done: Set<string>;
}

/** The most folders a line's `cd`s are followed to before the folder counts as unknown. */
const MAX_CWDS = 8;
/** The most names one file is followed under through links and copies. */
const MAX_NAMES = 16;
/** Words that make a line run commands again: loops, functions. */
const REPEATS = /\b(for|while|until|select|function)\b|\(\s*\)/;

/**
 * What a line writes, before any is recorded.
 *
 * @example
 * ```ts
 * import { newWritten } from "./written_scripts.ts";
 * newWritten("echo hi > f").writes.size; // 0
 * ```
 */
export function newWritten(line: string): Written {
  return {
    writes: new Map(),
    current: new Map(),
    links: new Map(),
    cwds: [""],
    here: [""],
    pathDirs: new Set(),
    pathUnknown: false,
    envFiles: new Set(),
    hooksDirs: new Set(),
    wild: false,
    repeats: REPEATS.test(line),
    done: new Set(),
  };
}

/**
 * How much a line's writes tell so far: a reading of the line that leaves it unchanged learned nothing new.
 *
 * @example
 * ```ts
 * import { newWritten, writtenSize } from "./written_scripts.ts";
 * writtenSize(newWritten("")); // 1
 * ```
 */
export function writtenSize(w: Written): number {
  return w.writes.size + w.links.size + w.cwds.length + w.pathDirs.size + w.envFiles.size + w.hooksDirs.size +
    (w.pathUnknown ? 1 : 0) + (w.wild ? 1 : 0) + (w.repeats ? 1 : 0);
}

/**
 * Starts another reading of the line: what it learned of the files it writes stays, the order starts again.
 *
 * @example
 * ```ts
 * import { beginReading, newWritten } from "./written_scripts.ts";
 * const written = newWritten("cd d");
 * beginReading(written);
 * written.here; // [""]
 * ```
 */
export function beginReading(written: Written): void {
  written.current = new Map();
  written.here = [""];
  written.done = new Set();
}

/** A path as written for comparison (`./p.sh` and `p.sh` and `x/../p.sh` are one). */
export function scriptKey(path: string): string {
  const p = posix.normalize(path).replace(/^\.\//, "").replace(/(.)\/+$/, "$1");
  return p === "." ? "" : p;
}

/** Records one text given to a path (`append`: added to what it holds). */
function addWrite(written: Written, target: ShellWord, text: string | null, how: Partial<Write> = {}): void {
  let path = scriptKey(target.text);
  const anywhere = target.dynamic;
  if (anywhere) {
    const tail = target.text.slice(target.text.lastIndexOf("/") + 1);
    path = /[$`]/.test(tail) || !target.text.includes("/") ? "" : tail; // a known last part, or none
  }
  const write: Write = { path, text, ...how, ...(anywhere ? { anywhere } : {}) };
  written.writes.set(JSON.stringify(write), write);
}

/** Records what a redirection or `tee` writes: each reading of the text, appended to what the path held. */
function addOutput(written: Written, target: ShellWord, texts: string[] | null, append: boolean): void {
  const key = scriptKey(target.text);
  const before = target.dynamic ? undefined : written.current.get(key);
  const after = texts === null
    ? [null]
    : append && before !== undefined
    ? texts.map((t) => before === null || written.repeats ? null : before + t)
    : texts.map((t) => append && written.repeats ? null : t);
  for (const text of after) addWrite(written, target, text);
  if (!target.dynamic) written.current.set(key, after.length === 1 ? after[0] : null);
  if (after.some((t) => t !== null && REPEATS.test(t))) written.repeats = true;
}

/** Programs whose writes `file_commands.ts` lists that are read here otherwise, or write no text. */
const NOT_WRITERS = new Set(["cp", "mv", "ln", "link", "install", "tee", "touch", "chmod", "chown", "chgrp"]);

/**
 * Records what a command writes to files: through `>`, `>>`, `&>` redirections and `tee FILE` (each reading of the
 * text `echo`, `printf` or `cat` of a here-document writes; else unknown), and through the other programs
 * `file_commands.ts` knows to write a file (unknown text); where its `cd` may lead; what `PATH`, `BASH_ENV`, `ENV`
 * and `core.hooksPath` it sets name. `final` is the command it runs once its wrappers are peeled.
 *
 * @example
 * ```ts
 * import { newWritten, recordWrites, writtenTexts } from "./written_scripts.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * const written = newWritten("");
 * recordWrites({ words: ["echo", "git", "push"].map(w), redirects: [{ op: ">", target: w("p.sh") }] }, written);
 * writtenTexts(written, "./p.sh")?.map((t) => t.text); // ["git push\n"]
 * ```
 */
export function recordWrites(c: SimpleCommand, written: Written, final: readonly ShellWord[] = c.words): void {
  const targets: { path: ShellWord; append: boolean }[] = (c.redirects ?? [])
    .filter((r) => /^(>|>\||>>|&>|&>>|<>)$/.test(r.op))
    .map((r) => ({ path: r.target, append: r.op.endsWith(">>") || r.op === "<>" }));
  const program = c.words[0];
  const name = program === undefined || program.dynamic ? "" : posix.basename(program.text);
  if (name === "tee") {
    const append = c.words.some((w) => /^(-a|--append)$/.test(w.text));
    for (const w of c.words.slice(1)) if (!w.text.startsWith("-")) targets.push({ path: w, append });
  }
  const texts = name === "" ? null : outputTexts(name, c.words.slice(1), c.heredoc);
  for (const { path, append } of targets) addOutput(written, path, texts, append);
  recordSettings(c.words, written);
  if (final !== c.words) recordSettings(final, written);
  const last = final[0] === undefined || final[0].dynamic ? "" : posix.basename(final[0].text);
  if (/^(cd|pushd|popd)$/.test(last)) recordCd(last, final.slice(1), written);
  // A wrapper that runs its command in another folder (`env -C sub sh -c '… > s'; sh sub/s`) leads there as `cd` does.
  for (const dir of chdirWords(c.words)) recordCd("cd", [dir], written);
  const roles = Object.hasOwn(FILE_COMMANDS, last) && !NOT_WRITERS.has(last)
    ? FILE_COMMANDS[last](final.slice(1), last)
    : [];
  for (const role of roles) {
    if (role.mode === "write" && !role.existing) addWrite(written, role.word, null, role.tree ? { tree: true } : {});
  }
}

/**
 * The folders a command's wrappers run it in: `env -C DIR`/`--chdir[=]DIR` (abbreviated too), `sudo -D DIR`/
 * `--chdir`, `tmux … -c DIR`, `setpriv`/`nsenter -w[DIR]`/`--wd`, `chroot`-like ones not (their root differs: the
 * paths are not the line's). A dynamic folder counts as one only known when it runs.
 */
function chdirWords(words: readonly ShellWord[]): ShellWord[] {
  const out: ShellWord[] = [];
  for (let k = 1; k < words.length; k++) {
    const t = words[k].text;
    if (t.charCodeAt(0) !== 45) continue; // not an option ("-")
    const eq = t.indexOf("=");
    if (/^--(ch|chd|chdi|chdir|wd)=/.test(t)) out.push(wordFrom(words[k], eq + 1));
    else if (/^(-C|-D|--ch|--chd|--chdi|--chdir|--wd)$/.test(t) && words[k + 1] !== undefined) out.push(words[k + 1]);
    else if (/^-[CDw]./.test(t) && !t.startsWith("--")) out.push(wordFrom(words[k], 2));
    else if (t === "-c" && /(^|\/)tmux$/.test(words[0].text) && words[k + 1] !== undefined) out.push(words[k + 1]);
  }
  return out;
}

/** Records where `cd DIR`, `pushd DIR` or `popd` may lead (every folder the line may be in, and each one further). */
function recordCd(name: string, args: readonly ShellWord[], written: Written): void {
  const operand = args.find((w) => !/^-[LPe@]+$/.test(w.text) && w.text !== "--");
  let to: string | null = operand === undefined ? (name === "cd" ? "~" : null) : operand.text;
  if (name === "popd" || operand?.dynamic || to === "-" || /^[+-]\d+$/.test(to ?? "")) to = null;
  const next = to === null
    ? [null]
    : written.here.map((c) =>
      to!.startsWith("/") || to!.startsWith("~") ? scriptKey(to!) : c === null ? null : scriptKey(posix.join(c, to!))
    );
  for (const c of next) {
    const at = written.cwds.length >= MAX_CWDS && !written.cwds.includes(c) ? null : c;
    if (!written.here.includes(at)) written.here.push(at);
    if (!written.cwds.includes(at)) written.cwds.push(at);
  }
}

/** Records the files and folders a command's settings name: `PATH=…`, `BASH_ENV=…`, `ENV=…`, `core.hooksPath`. */
function recordSettings(words: readonly ShellWord[], written: Written): void {
  for (let k = 0; k < words.length; k++) {
    const w = words[k];
    const m = /^(PATH|BASH_ENV|ENV)\+?=(.*)$/s.exec(w.text);
    if (m?.[1] === "PATH") {
      for (const dir of m[2].split(":")) {
        if (/^\$(PATH|\{PATH\})$/.test(dir)) continue; // the PATH it had
        if (/[$`*?[]/.test(dir)) written.pathUnknown = true;
        else written.pathDirs.add(scriptKey(dir));
      }
    } else if (m !== null && !w.dynamic && m[2] !== "") written.envFiles.add(scriptKey(m[2]));
    // core.hooksPath=DIR (git -c), or `git config core.hooksPath DIR`: "" for a folder only known when it runs.
    const hooks = /^core\.hookspath(?:=(.*))?$/is.exec(w.text);
    const dir = hooks === null
      ? undefined
      : hooks[1] !== undefined
      ? wordFrom(w, w.text.indexOf("=") + 1)
      : words[k + 1];
    if (dir !== undefined) written.hooksDirs.add(dir.dynamic ? "" : scriptKey(dir.text));
  }
}

/** `path` relative to `base` when it lies in it (or is it), else null. */
function within(path: string, base: string): string | null {
  if (path === base) return "";
  if (base === "") return path.startsWith("/") ? null : path;
  return path.startsWith(base + "/") ? path.slice(base.length + 1) : null;
}

/** The names a path's file goes by through the line's links and copies (a copy's source gives its text). */
function namesOf(written: Written, path: string): string[] {
  const names = [scriptKey(path)];
  for (let i = 0; i < names.length && names.length < MAX_NAMES; i++) {
    for (const { from, to, both } of written.links.values()) {
      for (const [a, b] of both ? [[to, from], [from, to]] : [[to, from]]) {
        const rest = within(names[i], a);
        const name = rest === null ? null : scriptKey(posix.join(b, rest));
        if (name !== null && !names.includes(name)) names.push(name);
      }
    }
  }
  return names;
}

/** Where a path leads from a folder (`~/x` and `/x` from anywhere). */
function from(cwd: string, path: string): string {
  return path.startsWith("/") || path.startsWith("~") ? path : scriptKey(posix.join(cwd, path));
}

/** Whether a write may have given the file `path` names its text, from any folder the line may be in. */
function reaches(written: Written, write: Write, path: string): boolean {
  const base = posix.basename(path);
  if (write.anywhere) return write.path === "" || write.path === base;
  const same = posix.basename(write.path) === base;
  if (written.cwds.includes(null) && same) return true;
  if (!same && write.tree !== true) return false; // from any folders, a file keeps its name: not this one
  const cwds = written.cwds.filter((c) => c !== null);
  return cwds.some((a) =>
    cwds.some((b) => {
      const target = from(a, write.path), run = from(b, path);
      return target === run || (write.tree === true && within(run, target) !== null);
    })
  );
}

/** The texts the line gives the file a path names: null for one only known when it runs; none: it wrote none. */
function textsOf(written: Written, path: string): (string | null)[] {
  const writes = [...written.writes.values()];
  const some = writes.some((w) => !w.conditional);
  const names = namesOf(written, path);
  const texts = writes.filter((w) => (some || !w.conditional) && names.some((n) => reaches(written, w, n)))
    .map((w) => w.text);
  if (texts.length === 0 && written.wild && some) texts.push(null);
  return [...new Set(texts)];
}

/**
 * The texts of a file the line wrote, as shell words to read (one dynamic word when any is unknown), or undefined
 * when the line did not write it.
 *
 * @example
 * ```ts
 * import { newWritten, writtenTexts } from "./written_scripts.ts";
 * const written = newWritten("");
 * written.writes.set("p", { path: "p.sh", text: "git push\n" });
 * writtenTexts(written, "./p.sh")?.[0].text; // "git push\n"
 * ```
 */
export function writtenTexts(written: Written, path: string): ShellWord[] | undefined {
  if (written.writes.size === 0) return undefined;
  const texts = textsOf(written, path);
  if (texts.length === 0) return undefined;
  if (texts.includes(null)) return [{ text: `(what this line wrote to ${path})`, dynamic: true, literal: "" }];
  return texts.map((text) => ({ text: text!, dynamic: false, literal: text! }));
}

/**
 * The text of a file the line wrote as one shell word (dynamic when unknown, or when it wrote several), or undefined
 * when the line did not write it.
 *
 * @example
 * ```ts
 * import { newWritten, writtenText } from "./written_scripts.ts";
 * writtenText(newWritten(""), "./p.sh"); // undefined
 * ```
 */
export function writtenText(written: Written, path: string): ShellWord | undefined {
  const texts = writtenTexts(written, path);
  if (texts === undefined || texts.length === 1) return texts?.[0];
  return { text: `(what this line wrote to ${path})`, dynamic: true, literal: "" };
}

/**
 * The texts of the file a command word runs when the line wrote it: a path (`./s`), or a bare name found through a
 * `PATH` the line set (`PATH=.:$PATH s`); undefined when it wrote none.
 *
 * @example
 * ```ts
 * import { commandTexts, newWritten } from "./written_scripts.ts";
 * commandTexts(newWritten(""), "ls"); // undefined
 * ```
 */
export function commandTexts(written: Written, word: string): ShellWord[] | undefined {
  if (word.includes("/")) return writtenTexts(written, word);
  if (written.writes.size === 0 || (written.pathDirs.size === 0 && !written.pathUnknown)) return undefined;
  // A file the line wrote (or linked) under this name, or one whose name is not known: else nothing to look up.
  const named = [...written.writes.values()].some((w) =>
    w.anywhere || w.tree === true || posix.basename(w.path) === word
  );
  const linked = [...written.links.values()].some((l) =>
    posix.basename(l.to) === word || posix.basename(l.from) === word
  );
  if (!named && !linked) return undefined;
  const texts = [...written.pathDirs].flatMap((dir) => writtenTexts(written, posix.join(dir, word)) ?? []);
  if (written.pathUnknown && named) {
    texts.push({ text: `(what this line wrote to ${word})`, dynamic: true, literal: "" });
  }
  return texts.length > 0 ? texts : undefined;
}

/** The paths of the files the line wrote whose names match `name` (each path once, as written). */
export function writtenPaths(written: Written, name: RegExp): string[] {
  return [...new Set([...written.writes.values()].filter((w) => name.test(w.path)).map((w) => w.path))];
}

/**
 * The command the kernel runs for a script whose first line is `#!INTERPRETER [ARGUMENT]`: `INTERPRETER [ARGUMENT]
 * path args…` (Linux passes the rest of the line as one argument; macOS splits it at spaces: `split`), or null
 * when it has none.
 *
 * @example
 * ```ts
 * import { shebangCommand } from "./written_scripts.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * shebangCommand("#!/usr/bin/env -S git push\n", [w("./p")])?.words.map((x) => x.text);
 * // ["/usr/bin/env", "-S git push", "./p"]
 * ```
 */
export function shebangCommand(
  text: string,
  run: readonly ShellWord[],
): { words: ShellWord[]; split: ShellWord[] | null } | null {
  const m = /^#![ \t]*([^ \t\n]+)[ \t]*([^\n]*)/.exec(text);
  if (m === null) return null;
  const word = (t: string): ShellWord => ({ text: t, dynamic: false, literal: t });
  const argument = m[2].replace(/[ \t]+$/, "");
  const head = [word(m[1]), ...(argument === "" ? [] : [word(argument)])];
  const parts = argument.split(/[ \t]+/);
  return {
    words: [...head, ...run],
    split: parts.length > 1 ? [word(m[1]), ...parts.map(word), ...run] : null,
  };
}

/** Programs a line copied or linked under another name: by path as written (normalised), and by bare name. */
export type Copies = Map<string, string | null>;

/** The value options of `cp`, `mv`, `ln` and `install` (the target folder is read apart). */
const COPY_VALUES = /^(-S|--suffix|-m|--mode|-o|--owner|-g|--group|-Z|--context|--backup|--sparse|--reflink)$/;
/** Files that are a command's input: a copy of one holds what the line gives it. */
const INPUT_FILES = /^(\/dev\/stdin|\/dev\/fd\/\d+|\/proc\/[^/]+\/fd\/\d+|\/dev\/tty)$/;

/** How `cp`, `mv`, `ln` or `install` makes its targets: a copy, a hard link, or a symbolic link. */
function copyKind(name: string, words: readonly ShellWord[]): "copy" | "hard" | "symbolic" {
  const flags = words.slice(1).filter((w) => /^-[^-]/.test(w.text)).map((w) => w.text.slice(1)).join("");
  const long = (f: string) => words.some((w) => w.text === f);
  if ((name === "ln" || name === "cp") && (flags.includes("s") || long("--symbolic") || long("--symbolic-link"))) {
    return "symbolic";
  }
  return name === "ln" || name === "link" || (name === "cp" && (flags.includes("l") || long("--link")))
    ? "hard"
    : "copy";
}

/** Records that a target holds what a source holds (or names it, a link), for {@link writtenTexts}. */
function recordLink(written: Written, source: ShellWord, target: ShellWord, kind: ReturnType<typeof copyKind>) {
  if (target.dynamic || (source.dynamic && kind !== "copy")) {
    written.wild = true; // a written text may now be under a name only known when it runs
    return;
  }
  if (source.dynamic) return addWrite(written, target, null, { conditional: true });
  if (INPUT_FILES.test(source.text)) return addWrite(written, target, null); // `cp /dev/stdin s <<< …`
  const to = scriptKey(target.text);
  // A symbolic link's text is a path from the link's folder.
  const from = kind === "symbolic" && !source.text.startsWith("/")
    ? scriptKey(posix.join(posix.dirname(to), source.text))
    : scriptKey(source.text);
  const link: Link = { from, to, both: kind !== "copy" };
  written.links.set(JSON.stringify(link), link);
}

/**
 * Records what `cp`, `mv`, `ln` or `install` puts under another name: a program (`cp /usr/bin/git gp`, `ln -s
 * "$(which git)" gp`: the copy's path and name stand for the source's program, null for a source only known when it
 * runs), and which paths then name a file's text (a copy holds its source's texts; a link and its file hold each
 * other's, whenever either is written).
 *
 * @example
 * ```ts
 * import { type Copies, newWritten, recordCopies } from "./written_scripts.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * const copies: Copies = new Map();
 * recordCopies(["cp", "/usr/bin/git", "gp"].map(w), newWritten(""), copies);
 * copies.get("gp"); // "git"
 * ```
 */
export function recordCopies(words: readonly ShellWord[], written: Written, copies: Copies): void {
  const program = words[0];
  if (program === undefined || program.dynamic) return;
  const name = posix.basename(program.text);
  if (!/^(cp|mv|ln|install|link)$/.test(name)) return;
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
  if (target === undefined) return;
  const kind = copyKind(name, words);
  for (const source of operands) {
    const base = source.dynamic ? null : posix.basename(source.text);
    if (target.dynamic) {
      recordLink(written, source, target, kind);
      continue;
    }
    // Copied into a folder, it keeps its name there: both the target and target/name stand for it.
    for (
      const path of folder ? [posix.join(target.text, base ?? "")] : [target.text, posix.join(target.text, base ?? "")]
    ) {
      const key = scriptKey(path);
      const from = source.dynamic ? undefined : copies.get(scriptKey(source.text));
      copies.set(key, from !== undefined ? from : base);
      copies.set(`name:${posix.basename(key)}`, from !== undefined ? from : base);
      recordLink(written, source, { ...target, text: path }, kind);
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
