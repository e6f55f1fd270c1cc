/**
 * Terminal multiplexers and job schedulers: what `tmux` runs (`new-session`, `new-window`, `split-window`,
 * `respawn-*`, `run-shell`, `display-popup` and `if-shell` commands, the text `send-keys` types, `tmux -c`), and the
 * job `at` or `batch` reads. `screen` is a runner (`runners.ts`).
 *
 * @module
 */
import type { Runs } from "./command_options.ts";
import { joinWords, literalWord, parseShell, type ShellWord } from "./shell.ts";
import { ownEntry } from "../../json.ts";

/** tmux commands that run a shell command, and the letters of their options that take a value. */
const TMUX_COMMANDS: Record<string, string> = {
  "new-session": "cefFnstxy",
  "new-window": "ceFnt",
  "split-window": "celtFp",
  "respawn-pane": "cet",
  "respawn-window": "cet",
  "run-shell": "cdt",
  "display-popup": "bcdehsStTwxy",
  "if-shell": "t",
  "send-keys": "Nt",
};
const TMUX_ALIASES: Record<string, string> = {
  new: "new-session",
  neww: "new-window",
  splitw: "split-window",
  respawnp: "respawn-pane",
  respawnw: "respawn-window",
  run: "run-shell",
  popup: "display-popup",
  if: "if-shell",
  send: "send-keys",
};
/** Key names `send-keys` presses rather than types. */
const TMUX_KEYS =
  /^(Enter|KPEnter|Escape|Tab|BTab|Space|BSpace|Up|Down|Left|Right|Home|End|PageUp|PageDown|NPage|PPage|DC|IC|F\d+|[CMS]-.+)$/;

/**
 * What a terminal multiplexer or job scheduler runs: `tmux new-session|new-window|split-window|respawn-*|run-shell|
 * display-popup CMD`, `tmux if-shell CMD …` (and the tmux commands it runs), what `tmux send-keys` types, `tmux -c
 * CMD`; the job `at`/`batch` read (a here-document or here-string, else unknown). Null when `name` is none of them.
 *
 * @example
 * ```ts
 * import { sessionRuns } from "./sessions.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * sessionRuns("tmux", ["tmux", "new", "-d", "git push"].map(w), null)?.scripts[0].script.text; // "git push"
 * ```
 */
export function sessionRuns(name: string, words: readonly ShellWord[], heredoc: ShellWord | null): Runs | null {
  if (name === "tmux") {
    const out: Runs = { scripts: [], commands: [], problems: [] };
    tmuxRuns(words.slice(1), out, 0);
    return out;
  }
  if (name === "at" || name === "batch") {
    if (words.some((w) => /^-[a-zA-Z]*[lrdc]/.test(w.text) && !/^-[a-zA-Z]*[qftM]/.test(w.text))) return null;
    if (words.some((w) => /^-[a-zA-Z]*f/.test(w.text))) return null; // a script file: not read (like `bash x.sh`)
    return heredoc !== null
      ? { scripts: [{ script: heredoc, args: false }], commands: [], problems: [] }
      : { scripts: [], commands: [], problems: [`${name} reads the job from its input, unknown until it runs`] };
  }
  return null;
}

/** Reads tmux's arguments: its own options, then commands separated by `;`. */
function tmuxRuns(args: readonly ShellWord[], out: Runs, depth: number): void {
  if (depth > 4) return void out.problems.push("tmux commands nested too deep");
  let i = 0;
  while (i < args.length && args[i].text.startsWith("-") && args[i].text !== "--") {
    if (args[i].text === "-c") out.scripts.push({ script: args[i + 1] ?? literalWord(""), args: false });
    i += /^-[cfLST]$/.test(args[i].text) ? 2 : 1;
  }
  let start = i;
  for (let k = i; k <= args.length; k++) {
    if (k < args.length && args[k].text !== ";" && !args[k].text.endsWith("\\;")) continue;
    if (k > start) tmuxCommand(args.slice(start, k), out, depth);
    start = k + 1;
  }
}

/** One tmux command: the shell command it runs (its words after its options, joined), if it runs one. */
function tmuxCommand(words: readonly ShellWord[], out: Runs, depth: number): void {
  const given = words[0].text;
  const name = ownEntry(TMUX_ALIASES, given) ?? given;
  if (!Object.hasOwn(TMUX_COMMANDS, name)) return;
  const values = TMUX_COMMANDS[name];
  let i = 1, flags = "";
  while (i < words.length && /^-./.test(words[i].text) && words[i].text !== "--") {
    const t = words[i].text;
    const k = [...t.slice(1)].findIndex((c) => values.includes(c));
    flags += t.slice(1, k === -1 ? undefined : k + 2);
    i += k === t.length - 2 ? 2 : 1; // the option taking a value is last in its word: the value is the next word
  }
  if (words[i]?.text === "--") i++;
  const rest = words.slice(i);
  if (rest.length === 0) return;
  if (name === "send-keys") {
    const typed = rest.filter((w) => !TMUX_KEYS.test(w.text));
    if (typed.length > 0) out.scripts.push({ script: joinWords(typed), args: false });
  } else if (name === "if-shell") {
    if (!flags.includes("F")) out.scripts.push({ script: rest[0], args: false });
    for (const then of rest.slice(1)) {
      if (then.dynamic) out.problems.push(`tmux if-shell runs ${then.text}, unknown until it runs`);
      else for (const c of parseShell(then.text, 1).commands) tmuxRuns(c.words, out, depth + 1);
    }
  } else if (!(name === "run-shell" && flags.includes("C"))) out.scripts.push({ script: joinWords(rest), args: false });
}
