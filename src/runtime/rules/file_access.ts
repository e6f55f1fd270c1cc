/**
 * From a shell command line to the files it reads and writes, for `Read(...)`,
 * `Edit(...)` and `Write(...)` rules: the arguments of the readers and
 * writers listed in {@link FILE_COMMANDS}, `<` and `>` redirections (those of
 * `sh -c` scripts and substitutions included), each command as it finally
 * runs once its wrappers are peeled (`sudo cat .env` is `cat .env`).
 *
 * A path argument comes in one of three forms: a `path`, a `glob` (the shell
 * expands it: `cat *.env`), or `unknown` when only
 * running the line tells (`cat "$F"`, `xargs cat`, `find … -exec cat {} \;`,
 * `patch < x.diff`, `~user/x`); a path may be read or written whole (`tree`:
 * a folder and all it holds: `grep -r x dir`, `tar c dir`, `rm -r dir`). Relative paths are resolved against the call's
 * cwd and against every folder a `cd`/`pushd` of the line (or `env -C`, `sudo
 * -D`) may have moved to; a `cd` to an unknown folder makes them unknown.
 *
 * @module
 */
import { join } from "node:path";
import type { ShellWord } from "./shell.ts";
import { type CommandUnits, programName, type Stage } from "./unwrap.ts";
import { lexicalPath } from "./resolve_path.ts";
import { FILE_COMMANDS, type Reader, type Role, splitArgs } from "./file_commands.ts";
import { gitFiles } from "./file_git.ts";
import { ownEntry } from "../../json.ts";

/** Every command whose arguments name files: `file_commands.ts`' table, and git (`file_git.ts`). */
const READERS: Record<string, Reader> = { ...FILE_COMMANDS, git: gitFiles };

/** Whether a command reads or writes a file. */
export type AccessMode = "read" | "write";

/** One file access of a command line. */
export interface FileAccess {
  mode: AccessMode;
  form: "path" | "glob" | "unknown";
  /** An absolute path, an absolute glob, or the word as written (`unknown`). */
  path: string;
  /** Whether what it names is read or written whole, a folder with all it holds (`grep -r`, `rm -r`, `tar c`). */
  tree?: boolean;
  /** For a folder written whole: only what it holds now is touched (`rm -r`), nothing new is created. */
  existing?: boolean;
  /** A listing (`ls`, `find`, `tree`): the folder's entries' names are read, not what the files hold. */
  names?: boolean;
  /** What accesses it (`cat`, `>`, `cp`). */
  by: string;
  /** Its spellings once resolved (see `resolve_path.ts`), kept for the other rules of the same decision. */
  spellings?: string[];
}

/** Where relative paths start, and the home folder for `~`. */
export interface AccessContext {
  cwd: string;
  home: string;
}

const REDIRECT_MODES: Record<string, AccessMode[]> = {
  "<": ["read"],
  "<>": ["read", "write"],
  ">": ["write"],
  ">>": ["write"],
  ">|": ["write"],
  ">&": ["write"],
  "&>": ["write"],
};

/** Whether a word holds an expansion whose value is unknown (not just a glob). */
function expands(w: ShellWord): boolean {
  return w.dynamic && /[$`]/.test(w.text);
}

/** The accesses one path word stands for, against each possible cwd. */
function accessesOf(
  w: ShellWord,
  role: Omit<Role, "word">,
  by: string,
  cwds: readonly (string | null)[],
  home: string,
) {
  const out: FileAccess[] = [];
  const unknown = () => out.push({ mode: role.mode, form: "unknown", path: w.text, by });
  // `<( … )` is a pipe whose commands are read as commands; what `$( … )` names is only known when it runs (a reader
  // that spells both as `( … )` leaves them unknown).
  if (w.dynamic && /^[<>]\(/.test(w.text)) return out;
  if (expands(w) || w.dynamic && w.text.startsWith("(") || w.text.includes("{}") || /^~[^/]/.test(w.text)) {
    unknown();
    return out;
  }
  let text = w.text;
  if (text === "~" || text.startsWith("~/")) text = join(home, text.slice(1));
  for (const cwd of text.startsWith("/") ? ["/"] : cwds) {
    if (cwd === null) {
      unknown();
      continue;
    }
    const path = w.dynamic ? join(lexicalPath(".", cwd), text) : lexicalPath(text, cwd);
    const form = w.dynamic ? "glob" : "path";
    out.push({ mode: role.mode, form, path, by, tree: role.tree, existing: role.existing, names: role.names });
  }
  return out;
}

/** Where a stage moves the shell (`cd`, `pushd`, `popd`) or runs its command (`env -C`, `sudo -D`): a word, home, unknown. */
function movesTo(stage: Stage): ShellWord | "home" | "unknown" | undefined {
  const name = stage[0].text;
  if (name === "popd" || (name === "cd" || name === "pushd") && stage[1]?.text === "-") return "unknown";
  if (name === "cd" || name === "pushd") return splitArgs(stage.slice(1)).operands[0] ?? "home";
  if (name !== "env" && name !== "sudo") return undefined;
  const o = splitArgs(stage.slice(1), { short: name === "env" ? "Cu" : "DugpChrtUT", long: ["chdir"] });
  return o.options.find((x) => x.flag === (name === "env" ? "-C" : "-D") || x.flag === "--chdir")?.value;
}

/** The folders a line's commands may run in: its cwd, and where each `cd` may lead (null: unknown). */
function possibleCwds(units: Stage[][], ctx: AccessContext): (string | null)[] {
  const cwds: (string | null)[] = [ctx.cwd];
  let at: string | null = ctx.cwd;
  for (const unit of units) {
    for (const stage of unit) {
      const to = movesTo(stage);
      if (to === undefined) continue;
      if (to === "home") at = ctx.home;
      else if (to === "unknown" || to.dynamic) at = null;
      else {
        const dir = to.text.replace(/^~(?=\/|$)/, ctx.home);
        at = dir.startsWith("/") ? lexicalPath(dir, "/") : at === null ? null : lexicalPath(dir, at);
      }
      if (!cwds.includes(at)) cwds.push(at);
    }
  }
  return cwds;
}

/**
 * The files a command line reads and writes.
 *
 * @example
 * ```ts
 * import { fileAccesses } from "./file_access.ts";
 * import { commandUnits } from "./unwrap.ts";
 * fileAccesses(commandUnits("cat .env > out"), { cwd: "/w", home: "/h" }).map((a) => `${a.mode} ${a.path}`);
 * // ["write /w/out", "read /w/.env"]
 * ```
 */
export function fileAccesses(units: CommandUnits, ctx: AccessContext): FileAccess[] {
  const cwds = possibleCwds(units.units, ctx);
  const out: FileAccess[] = [];
  for (const r of units.redirects) {
    for (const mode of REDIRECT_MODES[r.op] ?? []) out.push(...accessesOf(r.target, { mode }, r.op, cwds, ctx.home));
  }
  // The strings of an interpreter's code that may be paths (`python3 -c "open('.env')"`): read and written.
  for (const w of units.codePaths) {
    for (const mode of ["read", "write"] as const) out.push(...accessesOf(w, { mode }, "code", cwds, ctx.home));
  }
  // The alternate readings of wrapper options too (`faketime -f X cat .env`): more files, never fewer.
  for (const unit of [...units.units, ...units.alternates]) {
    // A wrapper that opens a file itself: `xargs -a FILE` reads it.
    for (const stage of unit.slice(0, -1)) {
      if (programName(stage[0]) !== "xargs" || stage[0].dynamic) continue;
      for (const role of READERS.xargs(stage.slice(1), "xargs")) {
        out.push(...accessesOf(role.word, role, "xargs", cwds, ctx.home));
      }
    }
    const last = unit.at(-1)!;
    const name = programName(last[0]);
    const reader: Reader | undefined = ownEntry(READERS, name);
    if (reader === undefined || last[0].dynamic) continue;
    // git's own options (`git -C dir show …`) are set aside in the last stage: its paths are read where they point.
    const words = name === "git"
      ? unit.findLast((st) => st[1]?.text.startsWith("-") && programName(st[0]) === "git") ?? last
      : last;
    const roles = reader(words.slice(1), name);
    for (const role of roles) out.push(...accessesOf(role.word, role, name, cwds, ctx.home));
    // `xargs cat`: the files come down a pipe, unknown here.
    if (unit.slice(0, -1).some((s) => s[0].text === "xargs")) {
      const modes = new Set(reader([{ text: "\0x", dynamic: false, literal: "\0x" }], name).map((r) => r.mode));
      for (const mode of modes.size > 0 ? modes : new Set<AccessMode>(["read"])) {
        out.push({ mode, form: "unknown", path: "(its input)", by: `xargs ${name}` });
      }
    }
  }
  return distinct(out);
}

/** Each access once (`git show HEAD:x` names the same file from several folders up once it resolves past `/`). */
function distinct(accesses: FileAccess[]): FileAccess[] {
  const seen = new Set<string>();
  return accesses.filter((a) => {
    const key = `${a.mode}\0${a.form}\0${a.path}\0${a.by}\0${a.tree ?? ""}\0${a.existing ?? ""}\0${a.names ?? ""}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
