/**
 * The files a `git` command reads or writes by naming them (for `Read(...)` and `Edit(...)` rules): the paths it
 * restores over the work tree (`git checkout [REV] [--] PATH`, `git restore PATH`), removes (`git rm`, `git clean`,
 * which without paths cleans the whole folder), moves (`git mv`), or patches (`git apply`, `git am`: the files the
 * patch names, unknown here); and the contents it shows (`git show REV:PATH`, `git cat-file -p REV:PATH`, `git
 * blame PATH`, `git diff --no-index A B`, the paths after `--` of `git diff`, `git log`, `git show`, and `git grep`'s
 * pathspecs, or, with none, the tree where it runs).
 * Paths are relative to `git -C DIR` when it is given; a `REV:PATH` one to the repository's top (any folder above). Commands that rewrite what git tracks as a whole (`git reset
 * --hard`, `git checkout BRANCH`, `git stash pop`, `git merge`, `git pull`) are not read.
 *
 * @module
 */
import { literalWord, type ShellWord } from "./shell.ts";
import { type Role, splitArgs, type ValueOptions } from "./file_commands.ts";
import { GIT_VALUE_OPTIONS } from "./git.ts";

/** Options of subcommands that take a value (so the value is no path). */
const SUB_VALUES: Record<string, ValueOptions> = {
  clone: { short: "obcju", long: ["origin", "branch", "config", "jobs", "upload-pack", "reference", "depth"] },
  checkout: { short: "bBU", long: ["orphan", "conflict", "pathspec-from-file", "track"] },
  restore: { short: "s", long: ["source", "pathspec-from-file", "conflict"] },
  rm: { long: ["pathspec-from-file"] },
  clean: { short: "e", long: ["exclude"] },
  mv: {},
  apply: { short: "pC", long: ["directory", "exclude", "include", "whitespace", "build-fake-ancestor"] },
  am: { short: "pC", long: ["directory", "exclude", "include", "whitespace", "patch-format", "resolvemsg"] },
  show: { long: ["format", "pretty", "encoding", "decorate-refs"] },
  "cat-file": {},
  blame: { short: "LSC", long: ["contents", "ignore-rev", "ignore-revs-file", "since", "encoding", "date"] },
  annotate: { short: "LS", long: ["contents", "encoding"] },
  diff: { short: "UOG", long: ["output", "src-prefix", "dst-prefix", "diff-filter", "relative"] },
  log: { short: "nUG", long: ["format", "pretty", "since", "until", "author", "grep", "max-count", "encoding"] },
  grep: { short: "efABCm", long: ["max-count", "context", "before-context", "after-context", "threads"] },
};

/** A path given relative to `git -C DIR`, as seen from where the command runs. */
function under(dir: ShellWord | null, w: ShellWord): ShellWord {
  if (dir === null || w.text.startsWith("/")) return w;
  const text = `${dir.text.replace(/\/+$/, "")}/${w.text}`;
  if (!dir.dynamic && !w.dynamic) return literalWord(text);
  return { text, dynamic: true, literal: dir.dynamic ? dir.literal : `${dir.text.replace(/\/+$/, "")}/${w.literal}` };
}

/** How many folders up a repository's top may be from where git runs (`REV:PATH` is relative to the top). */
const MAX_TOP_DEPTH = 12;

/**
 * The paths a `REV:PATH` object name (`HEAD:.env`, `:.env` for the index) may show: relative to where git runs when
 * it starts with `./` or `../`, else to the repository's top, which may be any folder above (each is a candidate);
 * none when the word is no object name.
 */
function objectPaths(w: ShellWord): ShellWord[] {
  const colon = w.text.indexOf(":");
  if (colon < 0 || /^[a-z][a-z0-9+.-]*:\/\//i.test(w.text)) return [];
  const text = w.text.slice(colon + 1);
  if (text === "") return [];
  const literal = w.dynamic ? (w.literal.length > colon ? w.literal.slice(colon + 1) : "") : text;
  const path = (prefix: string): ShellWord => ({
    text: prefix + text,
    dynamic: w.dynamic,
    literal: w.dynamic && literal === "" ? "" : prefix + literal,
  });
  if (/^\.\.?\//.test(text)) return [path("")];
  return Array.from({ length: MAX_TOP_DEPTH + 1 }, (_, k) => path("../".repeat(k)));
}

const UNKNOWN_PATCH: ShellWord = { text: "$(the files its patch names)", dynamic: true, literal: "" };

/**
 * The files a git command (its arguments after `git`) reads and writes by naming them.
 *
 * @example
 * ```ts
 * import { gitFiles } from "./file_git.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * gitFiles(["checkout", "--", "protected/x"].map(w)).map((r) => `${r.mode} ${r.word.text}`); // ["write protected/x"]
 * ```
 */
export function gitFiles(args: readonly ShellWord[]): Role[] {
  let i = 0, dir: ShellWord | null = null;
  while (i < args.length && args[i].text.startsWith("-") && !args[i].dynamic) {
    if (args[i].text === "-C" && args[i + 1] !== undefined) dir = dir === null ? args[i + 1] : under(dir, args[i + 1]);
    i += GIT_VALUE_OPTIONS.test(args[i].text) ? 2 : 1;
  }
  const sub = args[i]?.text ?? "";
  if (!Object.hasOwn(SUB_VALUES, sub)) return [];
  const rest = args.slice(i + 1);
  const a = splitArgs(rest, SUB_VALUES[sub]);
  const dashed = rest.findIndex((w) => w.text === "--");
  const afterDashes = dashed === -1 ? [] : rest.slice(dashed + 1);
  const flag = (...flags: string[]) => a.options.some((o) => flags.includes(o.flag));
  const at = (w: ShellWord) => under(dir, w);
  const writeAll = (w: ShellWord): Role => ({ word: at(w), mode: "write", tree: true, existing: true });
  const read = (w: ShellWord): Role => ({ word: at(w), mode: "read" });
  const readAll = (w: ShellWord): Role => ({ word: at(w), mode: "read", tree: true });
  switch (sub) {
    case "restore":
      if (flag("-S", "--staged") && !flag("-W", "--worktree")) return []; // the index only
      return a.operands.map(writeAll);
    case "rm":
      return flag("--cached") ? [] : a.operands.map(writeAll);
    case "checkout":
      // `git checkout main` names a branch, `git checkout x` a path: each operand counts as a path written.
      return a.operands.map(writeAll);
    case "mv":
      return a.operands.flatMap((w) => [read(w), writeAll(w)]);
    case "clean":
      if (flag("-n", "--dry-run")) return [];
      return (a.operands.length > 0 ? a.operands : [literalWord(".")]).map(writeAll);
    case "apply":
    case "am":
      if (sub === "apply" && flag("--check", "--stat", "--numstat", "--summary") && !flag("--apply")) return [];
      return [
        ...a.operands.map(read),
        { word: UNKNOWN_PATCH, mode: "write" },
      ];
    case "show":
    case "cat-file":
      return [
        ...a.operands.flatMap(objectPaths).map(read),
        ...afterDashes.map(read),
      ];
    case "blame":
    case "annotate":
      return a.operands.map(read);
    case "diff":
      if (rest.some((w) => w.text === "--no-index")) {
        return a.operands.map(read);
      }
      return [
        ...a.operands.flatMap(objectPaths).map(read),
        ...afterDashes.map(readAll),
      ];
    case "clone":
      // The folder it clones into (made, and filled), when named.
      return a.operands.slice(1, 2).map((w): Role => ({ word: at(w), mode: "write", tree: true }));
    case "grep": {
      // Its pathspecs, before `--` (after the pattern) or after it; none: the tree where it runs, read whole.
      const before = splitArgs(dashed === -1 ? rest : rest.slice(0, dashed), SUB_VALUES.grep);
      const patterned = before.options.some((o) => o.flag === "-e" || o.flag === "-f");
      const paths = [...(patterned ? before.operands : before.operands.slice(1)), ...afterDashes];
      const patternFiles = before.options.filter((o) => o.flag === "-f" && o.value).map((o) => read(o.value!));
      return [...(paths.length > 0 ? paths : [literalWord(".")]).map(readAll), ...patternFiles];
    }
    default: // log: the paths after `--`
      return afterDashes.map(readAll);
  }
}
