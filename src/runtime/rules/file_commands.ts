/**
 * The commands whose arguments name files they read or write, and which of
 * their arguments do: readers (`cat`, `head`, `grep` and `rg` past their
 * pattern, `sed` and `awk` past their script, `sort`, `diff`, `base64`,
 * `sha256sum`…), writers (`tee`, `rm`, `truncate`, `touch`, `chmod`, `sed -i`,
 * `dd of=`, `patch`…) and those that do both (`cp`, `mv`, `install`, `ln`,
 * `rsync`, `scp`, `tar`, `zip`, `unzip`, `gzip`, editors, `curl` and `wget`
 * files). Each maps a command's arguments (after its program name) to roles.
 *
 * @module
 */
import { statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { literalWord, type ShellWord, wordFrom } from "./shell.ts";
import { vimArgs } from "./vim_args.ts";
import { awkFiles, type ScriptFiles, sedFiles } from "./command_options.ts";
import type { AccessMode } from "./file_access.ts";

/** A path argument and how it is used. */
export interface Role {
  word: ShellWord;
  mode: AccessMode;
  tree?: boolean;
  /** For a folder written whole: only what it holds now is touched (`rm -r`, `chmod -R`), nothing is created. */
  existing?: boolean;
  /** A listing: the names of a folder's entries are read (see `FileAccess.names`). */
  names?: boolean;
}

/** A command's arguments split into options (with their values) and operands. */
export interface Args {
  options: { flag: string; value?: ShellWord }[];
  operands: ShellWord[];
}

/** Which options take a value: short letters, long names. */
export interface ValueOptions {
  short?: string;
  long?: string[];
}

/**
 * Splits arguments into options and operands (`--` ends the options; `-abc` is three flags, the first that takes a
 * value takes the rest of the word or the next word).
 *
 * @example
 * ```ts
 * import { splitArgs } from "./file_commands.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * splitArgs([w("-n5"), w("a")], { short: "n" }).operands.map((x) => x.text); // ["a"]
 * ```
 */
export function splitArgs(args: readonly ShellWord[], values: ValueOptions = {}): Args {
  const out: Args = { options: [], operands: [] };
  for (let i = 0; i < args.length; i++) {
    const w = args[i], t = w.text;
    if (t === "--") {
      out.operands.push(...args.slice(i + 1));
      break;
    }
    const isOption = t.startsWith("-") && t !== "-" || w.dynamic && w.literal.startsWith("-") && w.literal !== "-";
    if (!isOption) {
      out.operands.push(w);
      continue;
    }
    if (t.startsWith("--")) {
      const eq = t.indexOf("=");
      const flag = eq === -1 ? t : t.slice(0, eq);
      if (eq !== -1) out.options.push({ flag, value: wordFrom(w, eq + 1) });
      else if (values.long?.includes(flag.slice(2))) out.options.push({ flag, value: args[++i] });
      else out.options.push({ flag });
      continue;
    }
    for (let k = 1; k < t.length; k++) {
      const flag = `-${t[k]}`;
      if (!values.short?.includes(t[k])) {
        out.options.push({ flag });
        continue;
      }
      out.options.push({ flag, value: k + 1 < t.length ? wordFrom(w, k + 1) : args[++i] });
      break;
    }
  }
  return out;
}

/** How one command's arguments read and write files. */
export type Reader = (args: readonly ShellWord[], name: string) => Role[];

const read = (word: ShellWord, tree = false): Role => ({ word, mode: "read", tree });
const write = (word: ShellWord, tree = false): Role => ({ word, mode: "write", tree });
const has = (a: Args, ...flags: string[]) => a.options.some((o) => flags.includes(o.flag));
const values = (a: Args, ...flags: string[]) =>
  a.options.filter((o) => flags.includes(o.flag) && o.value).map((o) => o.value!);

/** Every operand is read. */
function reads(opts: ValueOptions = {}, writeFlags: string[] = []): Reader {
  return (args) => {
    const a = splitArgs(args, opts);
    return [...a.operands.map((w) => read(w)), ...values(a, ...writeFlags).map((w) => write(w))];
  };
}

/** Every operand is written (a tree with a recursive flag). */
function writes(opts: ValueOptions = {}, skip = 0, readFlags: string[] = []): Reader {
  return (args) => {
    const a = splitArgs(args, opts);
    const tree = has(a, "-r", "-R", "--recursive");
    const skipped = a.options.some((o) => o.flag === "--reference") ? 0 : skip;
    const roles = a.operands.slice(skipped).map((w): Role => ({ ...write(w, tree), existing: true }));
    return [...roles, ...values(a, ...readFlags).map((w) => read(w))];
  };
}

/** `grep PATTERN FILE…`, `rg`, `ag`: the pattern is not a file unless given by -e/-f; folders are read whole. */
function grep(args: readonly ShellWord[], name: string): Role[] {
  const a = splitArgs(args, {
    short: "efmABCgtTdD",
    long: ["regexp", "file", "max-count", "glob", "type", "type-not", "context", "after-context", "before-context"],
  });
  const given = has(a, "-e", "--regexp", "-f", "--file");
  const files = given ? a.operands : a.operands.slice(1);
  const tree = name !== "grep" && name !== "egrep" && name !== "fgrep" && name !== "zgrep" ||
    has(a, "-r", "-R", "--recursive", "--dereference-recursive");
  const dot: ShellWord = literalWord(".");
  const targets = files.length === 0 && tree ? [dot] : files;
  return [...targets.map((w) => read(w, tree)), ...values(a, "-f", "--file").map((w) => read(w))];
}

/** `sed SCRIPT FILE…` (`-i`: the files are written too), `awk PROGRAM FILE…`, `jq FILTER FILE…`. */
function scripted(args: readonly ShellWord[], name: string): Role[] {
  const opts = name === "sed"
    ? { short: "efl", long: ["expression", "file", "line-length"] }
    : name === "jq"
    ? { short: "fL", long: ["from-file", "arg", "argjson", "indent"] }
    : { short: "fvF", long: ["file", "assign", "field-separator", "include", "load"] };
  const a = splitArgs(args, opts);
  const given = values(a, "-f", "--file", "--from-file", "-e", "--expression").length > 0;
  const files = (given ? a.operands : a.operands.slice(1)).filter((w) => name === "sed" || !/^\w+=/.test(w.text));
  const inPlace = name === "sed" && a.options.some((o) => o.flag === "-i" || o.flag.startsWith("--in-place"));
  return [
    ...files.flatMap((w) => inPlace ? [read(w), write(w)] : [read(w)]),
    ...values(a, "-f", "--file", "--from-file").map((w) => read(w)),
    ...(name === "jq" ? [] : scriptRoles((name === "sed" ? sedFiles : awkFiles)([literalWord(name), ...args]))),
  ];
}

/** The files a program's own script opens (sed's `r`/`w`, awk's redirections), as roles. */
function scriptRoles(files: ScriptFiles): Role[] {
  return [...files.reads.map((f) => read(literalWord(f))), ...files.writes.map((f) => write(literalWord(f)))];
}

function isDirectory(w: ShellWord): boolean {
  try {
    return !w.dynamic && statSync(w.text).isDirectory();
  } catch {
    return false;
  }
}

/** A remote `host:path` operand of `scp`/`rsync`: not a local file. */
const remote = (w: ShellWord) => /^[^/]*:/.test(w.text) && !w.text.startsWith("./");

/** `cp`, `mv`, `install`, `ln`, `link` (a hard link: the file under a second name), `rsync`, `scp`: sources are read, the target is written. */
function copy(args: readonly ShellWord[], name: string): Role[] {
  const opts: ValueOptions = {
    cp: { short: "tS", long: ["target-directory", "suffix"] },
    mv: { short: "tS", long: ["target-directory", "suffix"] },
    install: { short: "mogtS", long: ["mode", "owner", "group", "target-directory", "suffix"] },
    ln: { short: "tS", long: ["target-directory", "suffix"] },
    rsync: { short: "efT", long: ["rsh", "exclude", "include", "filter", "files-from", "password-file", "temp-dir"] },
    scp: { short: "PiloFScJ" },
  }[name] ?? {};
  const a = splitArgs(args, opts);
  const recursive = name === "mv" || name === "rsync" && has(a, "-a", "--archive") ||
    has(a, "-r", "-R", "--recursive", "-a", "--archive");
  const dir = values(a, "-t", "--target-directory")[0];
  const ops = a.operands.filter((w) => !remote(w));
  const target = dir ?? (a.operands.length > 1 ? a.operands.at(-1) : undefined);
  const sources = dir !== undefined ? ops : ops.filter((w) => w !== target);
  const into = dir !== undefined || sources.length > 1 || target !== undefined &&
      (target.text.endsWith("/") || isDirectory(target));
  const roles: Role[] = sources.map((w) => read(w, recursive));
  if (name === "mv" || has(a, "--remove-source-files")) roles.push(...sources.map((w) => write(w, true)));
  roles.push(...values(a, "--files-from", "-i", "-F", "--password-file").map((w) => read(w)));
  if (target === undefined || remote(target)) return roles;
  if (!into) return [...roles, write(target, recursive)];
  for (const s of sources) {
    if (recursive && /(^|\/)\.?$/.test(s.text)) {
      roles.push(write(target, true)); // `cp -r src/. dst`, `rsync -a src/ dst`: what src holds lands in dst
      continue;
    }
    const base = s.text.replace(/\/+$/, "").split("/").pop() ?? "";
    const inside = s.dynamic || target.dynamic
      ? { text: `${target.text}/*`, dynamic: true, literal: target.text }
      : literalWord(`${target.text}/${base}`);
    roles.push(write(inside, recursive));
  }
  return roles;
}

/** `tar`: creating reads its operands whole and writes the archive; extracting writes the folder whole. */
function tar(args: readonly ShellWord[]): Role[] {
  const first = args[0];
  const bundled = first && !first.dynamic && /^[A-Za-z]+$/.test(first.text);
  const list = bundled ? [{ ...first, text: `-${first.text}`, literal: `-${first.text}` }, ...args.slice(1)] : args;
  const a = splitArgs(list, { short: "fCTXbHKLNgV", long: ["file", "directory", "files-from", "exclude-from"] });
  const archive = values(a, "-f", "--file");
  const lists = values(a, "-T", "--files-from", "-X", "--exclude-from").map((w) => read(w));
  const extract = has(a, "-x", "--extract", "--get");
  if (extract) {
    const dir = values(a, "-C", "--directory")[0] ?? literalWord(".");
    return [...archive.map((w) => read(w)), write(dir, true), ...lists];
  }
  if (has(a, "-c", "--create", "-r", "--append", "-u", "--update")) {
    return [...a.operands.map((w) => read(w, true)), ...archive.map((w) => write(w)), ...lists];
  }
  return [...archive.map((w) => read(w)), ...lists];
}

/** `zip OUT FILE…` (`-r`: folders whole), `unzip ARCHIVE [-d DIR]`. */
function zip(args: readonly ShellWord[], name: string): Role[] {
  const a = splitArgs(args, { short: name === "zip" ? "xitnbP" : "dxP" });
  if (name === "unzip") {
    const dir = values(a, "-d")[0] ?? literalWord(".");
    const listing = has(a, "-l", "-p", "-t", "-v", "-Z");
    return [...a.operands.slice(0, 1).map((w) => read(w)), ...(listing ? [] : [write(dir, true)])];
  }
  const tree = has(a, "-r", "-R", "--recurse-paths");
  return [...a.operands.slice(0, 1).map((w) => write(w)), ...a.operands.slice(1).map((w) => read(w, tree))];
}

/** `dd if=… of=…`. */
function dd(args: readonly ShellWord[]): Role[] {
  const roles: Role[] = [];
  for (const w of args) {
    const m = /^(if|of)=/.exec(w.text);
    if (m) roles.push({ word: wordFrom(w, 3), mode: m[1] === "if" ? "read" : "write" });
  }
  return roles;
}

/** `patch [FILE [PATCH]]`: with no file operand it writes the files its patch names, unknown here. */
function patch(args: readonly ShellWord[]): Role[] {
  const a = splitArgs(args, { short: "iopdDBrFzVYgx", long: ["input", "output", "directory", "reject-file"] });
  const out = values(a, "-o", "--output", "-r", "--reject-file").map((w) => write(w));
  const roles = [...values(a, "-i", "--input").map((w) => read(w)), ...out];
  if (a.operands.length === 0 && out.length === 0) {
    roles.push(write({ text: "$(the files its patch names)", dynamic: true, literal: "" }));
  }
  if (a.operands[0]) roles.push(read(a.operands[0]), write(a.operands[0]));
  if (a.operands[1]) roles.push(read(a.operands[1]));
  return roles;
}

/** The path of a `file://` URL (its text after the scheme, when it is not one the URL parser takes). */
function fileUrlPath(url: string): string {
  try {
    return fileURLToPath(url);
  } catch {
    return url.replace(/^file:\/\/[^/]*/i, "") || "/";
  }
}

/**
 * `curl -o OUT`, `-T FILE`, `-d @FILE`, `-F name=@FILE`, `--output-dir DIR`, a `file://` URL; `wget -O OUT`,
 * `--post-file FILE`, `-P DIR`.
 */
function fetcher(args: readonly ShellWord[], name: string): Role[] {
  const curl = name === "curl";
  const a = splitArgs(args, {
    short: curl ? "oTdFKHXAeEuxrwmyYzbcCDQ" : "OoaiPeTtwUAQP",
    long: curl
      ? [
        "output",
        "upload-file",
        "data",
        "data-binary",
        "data-raw",
        "data-urlencode",
        "data-ascii",
        "form",
        "config",
        "output-dir",
      ]
      : ["output-document", "post-file", "body-file", "input-file", "output-file", "append-output", "directory-prefix"],
  });
  const roles = [
    ...values(a, "-o", "--output", "-O", "--output-document", "--output-file", "--append-output").map((w) => write(w)),
    // Where downloads land: curl's --output-dir, wget's -P (a folder written, whatever the file is named).
    ...values(a, "--output-dir", "-P", "--directory-prefix").map((w) => write(w, true)),
    // A file:// URL is a file read (curl reads it).
    ...a.operands.filter((w) => /^file:\/\//i.test(w.text)).map((w) => read(literalWord(fileUrlPath(w.text)))),
    ...values(a, "-T", "--upload-file", "-K", "--config", "--post-file", "--body-file", "-i", "--input-file").map(
      (w) => read(w),
    ),
  ];
  for (const v of values(a, "-d", "--data", "--data-binary", "--data-urlencode", "--data-ascii", "-F", "--form")) {
    const at = v.text.search(/[@<]/);
    if (at !== -1) roles.push(read(wordFrom({ ...v, text: v.text.replace(/;.*$/, "") }, at + 1)));
  }
  return roles;
}

/**
 * `ls DIR`, `tree DIR`, `du DIR`: a listing reads the names of what a folder holds, as Claude Code counts `ls secrets`
 * a read under `Read(./secrets/**)`.
 */
function lists(opts: ValueOptions): Reader {
  return (args) => splitArgs(args, opts).operands.map((w) => ({ ...read(w), names: true }));
}

/**
 * `find DIR…` lists its starting points (the names below them); `-delete` removes what it finds there;
 * `-fprint FILE` writes FILE.
 */
function find(args: readonly ShellWord[]): Role[] {
  const start = args.findIndex((w) => /^[-(!]/.test(w.text));
  const dirs = start === -1 ? args : args.slice(0, start);
  const expr = start === -1 ? [] : args.slice(start);
  const roles: Role[] = dirs.map((w) => ({ ...read(w), names: true }));
  if (expr.some((w) => w.text === "-delete")) {
    const from = dirs.length > 0 ? dirs : [literalWord(".")];
    roles.push(...from.map((w): Role => ({ ...write(w, true), existing: true })));
  }
  expr.forEach((w, i) => {
    if (/^-f(print0?|printf|ls)$/.test(w.text) && expr[i + 1]) roles.push(write(expr[i + 1]));
  });
  return roles;
}

/** `openssl … -in FILE -out FILE` (and the key files it reads). */
function openssl(args: readonly ShellWord[]): Role[] {
  const roles: Role[] = [];
  args.forEach((w, i) => {
    const next = args[i + 1];
    if (!next) return;
    if (/^-(in|inkey|key|kfile|pass(in)?|CAfile|cert|signkey)$/.test(w.text)) {
      if (!/^-pass/.test(w.text)) roles.push(read(next));
      else if (/^file:/.test(next.text)) roles.push(read(wordFrom(next, 5)));
    } else if (w.text === "-out") roles.push(write(next));
  });
  return roles;
}

/** A shell or interpreter given a script file (`bash x.sh`, `python3 x.py`) reads it; `-c`/`-e` scripts are read as text. */
function interpreter(args: readonly ShellWord[], name: string): Role[] {
  const inline = /^(sh|bash|zsh|dash|ksh|mksh|ash)$/.test(name) ? /^-[a-zA-Z]*c/ : /^(-[a-zA-Z]*[ecm]|--eval|--print)$/;
  for (const w of args) {
    if (inline.test(w.text)) return [];
    if (!w.text.startsWith("-") && !w.text.startsWith("+")) return [read(w)];
  }
  return [];
}

/** Read and written in place: `gzip`, editors (the operands), unless writing to stdout. */
function inPlace(args: readonly ShellWord[]): Role[] {
  const a = splitArgs(args, { short: "S", long: ["suffix"] });
  const toStdout = has(a, "-c", "--stdout", "-l", "--list", "-t", "--test");
  return a.operands.flatMap((w) => toStdout ? [read(w)] : [read(w), write(w)]);
}

/**
 * vim (by any of its names, `vim_args.ts`): the files it edits are read and may be written, the files it runs as
 * commands (`-S f`, `-u f`) are read, the files it writes keys to (`-w f`) written; its `+CMD` and `-c CMD` are not
 * files.
 */
function vimFiles(args: readonly ShellWord[], name: string): Role[] {
  const a = vimArgs([literalWord(name), ...args]);
  return [
    ...a.files.flatMap((w) => [read(w), write(w)]),
    ...a.commandFiles.map((w) => read(w)),
    ...a.writes.map((w) => write(w)),
  ];
}
const VIMS = ["vi", "vim", "nvim", "ex", "view", "rview", "rvim", "evim", "eview", "vimdiff", "gvim", "gview"]
  .concat(["gvimdiff", "vimx", "editor", "vim.basic", "vim.tiny", "vim.nox", "vim.gtk", "vim.gtk3", "vim.athena"]);

const plain = reads();
const READERS: Record<string, Reader> = Object.fromEntries(
  [
    "cat",
    "tac",
    "nl",
    "less",
    "more",
    "most",
    "bat",
    "batcat",
    "paste",
    "join",
    "comm",
    "shuf",
    "tsort",
    "ptx",
    "m4",
    "cpp",
    "pv",
    "diff3",
    "sdiff",
    "cmp",
    "hexdump",
    "hd",
    "base32",
    "basenc",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "stat",
    "fold",
    "fmt",
    "pr",
    "expand",
    "unexpand",
    "rev",
    "zcat",
    "bzcat",
    "xzcat",
    "zstdcat",
    "zless",
    "zmore",
    "lzcat",
    "look",
    "shasum",
    "md5",
    "readelf",
    "objdump",
    "nm",
    "split",
    "csplit",
    "source",
    ".",
    "open",
    "xdg-open",
    "lp",
    "lpr",
    "colordiff",
  ].map((n) => [n, plain]),
);

/**
 * Every command whose arguments name files, by program name.
 *
 * @example
 * ```ts
 * import { FILE_COMMANDS } from "./file_commands.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * FILE_COMMANDS.cp([w("a"), w("b")], "cp").map((r) => `${r.mode} ${r.word.text}`); // ["read a", "write b"]
 * ```
 */
export const FILE_COMMANDS: Record<string, Reader> = {
  ...READERS,
  // `diff -r A B` reads both folders whole.
  diff: (args) => {
    const a = splitArgs(args, {
      short: "xXSFIDLUCW",
      long: ["exclude", "exclude-from", "starting-file", "label", "width"],
    });
    return a.operands.map((w) => read(w, has(a, "-r", "--recursive")));
  },
  // socat's file addresses (`FILE:p`, `OPEN:p`, `CREATE:p`, `GOPEN:p`, `PIPE:p`, a bare path): read and written.
  socat: (args) =>
    args.filter((w) => !/^-./.test(w.text)).flatMap((w) => {
      const text = w.dynamic ? w.literal : w.text;
      return text.split("!!").flatMap((address) => {
        const m = /^(?:file|open|create|gopen|pipe|unix-connect|unix-client|unix-listen):([^,]*)/i.exec(address);
        const path = m?.[1] ?? (/^[^:,]*\/[^:,]*$/.test(address) ? address : null);
        return path ? [read(literalWord(path)), write(literalWord(path))] : [];
      });
    }),
  // `xargs -a FILE`: the arguments come from FILE (what xargs then runs is read as a command of its own).
  xargs: (args) => {
    // GNU xargs' options that take a value (-e, -i and -l take one only when attached).
    const a = splitArgs(args, {
      short: "aEILnPsd",
      long: ["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"],
    });
    return values(a, "-a", "--arg-file").map((w) => read(w));
  },
  head: reads({ short: "nc", long: ["lines", "bytes"] }),
  tail: reads({ short: "ncs", long: ["lines", "bytes", "sleep-interval", "pid", "max-unchanged-stats"] }),
  sort: reads({ short: "kotST", long: ["key", "output", "field-separator", "buffer-size", "temporary-directory"] }, [
    "-o",
    "--output",
  ]),
  uniq: (args) => {
    const a = splitArgs(args, { short: "fsw", long: ["skip-fields", "skip-chars", "check-chars"] });
    return [...a.operands.slice(0, 1).map((w) => read(w)), ...a.operands.slice(1, 2).map((w) => write(w))];
  },
  wc: reads({ long: ["files0-from"] }),
  cut: reads({ short: "dfcb", long: ["delimiter", "fields", "characters", "bytes", "output-delimiter"] }),
  od: reads({ short: "AjNStw", long: ["address-radix", "skip-bytes", "read-bytes", "strings", "format", "width"] }),
  xxd: (args) => {
    const a = splitArgs(args, { short: "cglosn", long: ["cols", "len", "seek", "name"] });
    return [...a.operands.slice(0, 1).map((w) => read(w)), ...a.operands.slice(1, 2).map((w) => write(w))];
  },
  strings: reads({ short: "ntefT", long: ["bytes", "radix", "encoding", "target"] }),
  base64: reads({ short: "w", long: ["wrap"] }),
  file: reads({ short: "fFmeP", long: ["files-from", "separator", "magic-file", "exclude", "parameter"] }),
  iconv: reads({ short: "fto", long: ["from-code", "to-code", "output"] }, ["-o", "--output"]),
  column: reads({ short: "csoNRWHlEdJ", long: ["separator", "output-separator", "table-columns"] }),
  grep,
  egrep: grep,
  fgrep: grep,
  zgrep: grep,
  rg: grep,
  ag: grep,
  ack: grep,
  sed: scripted,
  awk: scripted,
  gawk: scripted,
  mawk: scripted,
  nawk: scripted,
  jq: scripted,
  tee: writes({}),
  rm: writes({}),
  unlink: writes({}),
  rmdir: writes({}),
  shred: writes({ short: "ns", long: ["iterations", "size", "random-source"] }),
  truncate: writes({ short: "sr", long: ["size", "reference"] }, 0, ["-r", "--reference"]),
  touch: writes({ short: "drt", long: ["date", "reference", "time"] }, 0, ["-r", "--reference"]),
  mkdir: writes({ short: "mZ", long: ["mode", "context"] }),
  chmod: writes({ long: ["reference"] }, 1, ["--reference"]),
  chown: writes({ long: ["reference", "from"] }, 1, ["--reference"]),
  chgrp: writes({ long: ["reference"] }, 1, ["--reference"]),
  chattr: writes({ short: "vp" }, 1),
  setfacl: writes({ short: "mxMX", long: ["modify", "remove", "set", "set-file", "modify-file", "remove-file"] }),
  cp: copy,
  mv: copy,
  install: copy,
  ln: copy,
  link: copy,
  rsync: copy,
  scp: copy,
  tar,
  zip,
  unzip: zip,
  dd,
  patch,
  find,
  openssl,
  ls: lists({
    short: "IwT",
    long: ["ignore", "hide", "format", "sort", "time", "time-style", "width", "tabsize", "block-size", "quoting-style"],
  }),
  dir: lists({ short: "IwT", long: ["ignore", "hide", "format", "sort", "time", "time-style", "width"] }),
  tree: lists({ short: "LPIo", long: ["filelimit", "timefmt", "charset"] }),
  du: lists({ short: "BdtX", long: ["block-size", "max-depth", "threshold", "exclude-from", "exclude", "time-style"] }),
  ...Object.fromEntries(
    [
      "sh",
      "bash",
      "zsh",
      "dash",
      "ksh",
      "mksh",
      "ash",
      "python",
      "python3",
      "node",
      "deno",
      "bun",
      "perl",
      "ruby",
      "php",
    ]
      .map((n) => [n, interpreter]),
  ),
  curl: fetcher,
  wget: fetcher,
  gzip: inPlace,
  gunzip: inPlace,
  bzip2: inPlace,
  bunzip2: inPlace,
  xz: inPlace,
  unxz: inPlace,
  zstd: inPlace,
  unzstd: inPlace,
  nano: inPlace,
  emacs: inPlace,
  ed: inPlace,
  ...Object.fromEntries(VIMS.map((n) => [n, vimFiles])),
};
