/**
 * Runners of a command in an environment of theirs: package runners (`npx git push`, `npm exec -- git push`,
 * `pnpm exec`, `pnpm dlx`, `yarn exec`, `bunx`, `bun x`, `uvx`, `uv run`, `poetry run`, `pipenv run`, `pdm run`,
 * `conda run`, `bundle exec`, `mise exec`), environment loaders (`direnv exec DIR`, `dotenv --`, `cross-env`,
 * `env-cmd`), containers (`docker exec CONTAINER`, `docker run IMAGE`, `podman`, `kubectl exec POD --`), Nix
 * (`nix-shell --run`, `nix develop -c`, `nix shell -c`), and the scripts some take instead (`npx -c '…'`, `npm exec
 * --call`, `mise exec -c`, `pnpm exec -c`). `wrappers.ts` peels them as it peels `nice`: their value options and
 * positionals are listed here under the program's name, or `program subcommand`.
 *
 * @module
 */
import type { Runs } from "./command_options.ts";
import { joinWords, literalWord, parseShell, type ShellWord, wordFrom } from "./shell.ts";
import type { Inner } from "./wrappers.ts";

/** Programs whose subcommand runs a command (`npm exec`): the subcommands. */
const SUBCOMMANDS: Record<string, readonly string[]> = {
  npm: ["exec", "x"],
  pnpm: ["exec", "dlx"],
  yarn: ["exec", "dlx"],
  bun: ["x"],
  uv: ["run"],
  poetry: ["run"],
  pipenv: ["run"],
  pdm: ["run"],
  conda: ["run"],
  mamba: ["run"],
  micromamba: ["run"],
  bundle: ["exec"],
  mise: ["exec", "x"],
  direnv: ["exec"],
  docker: ["exec", "run"],
  podman: ["exec", "run"],
  kubectl: ["exec"],
  nix: ["develop", "shell"],
};

const NPM =
  /^(-p|--package|-w|--workspace|--prefix|--userconfig|--cache|--registry|--loglevel|--node-options|--script-shell|-c|--call)$/;
const UV =
  /^(--with|--with-editable|--with-requirements|--from|--python|-p|--package|--extra|--group|--only-group|--no-group|--env-file|--directory|--project|--index|--default-index|--index-url|--extra-index-url|-i|--find-links|-f|--cache-dir|--config-file|--color|-C|--config-setting)$/;
const CONDA = /^(-n|--name|-p|--prefix|--cwd)$/;
const CONTAINER_EXEC = /^(-e|--env|--env-file|-u|--user|-w|--workdir|--detach-keys)$/;
const CONTAINER_RUN =
  /^(-e|--env|--env-file|-u|--user|-w|--workdir|-v|--volume|-p|--publish|--name|--network|--net|--entrypoint|-l|--label|--mount|--platform|-h|--hostname|--add-host|--cpus|-m|--memory|--device|--cap-add|--cap-drop|--security-opt|--ulimit|--restart|--pull|--tmpfs|--log-driver|--log-opt|--gpus|--ipc|--pid|--userns|--dns|--stop-signal|--shm-size|--runtime|--cidfile|--link|--expose|--group-add|--health-cmd|--volumes-from|--label-file|--cgroupns|--uts)$/;
const NIX_COMMAND = /^(-c|--command|--profile|--override-input|-I|--option|--arg|--argstr|--expr|--file|-f)$/;

/** Value options of each runner (`program` or `program subcommand`), as in `wrappers.ts`' table. */
export const RUNNER_OPTIONS: Record<string, RegExp> = {
  npx: NPM,
  "npm exec": NPM,
  "npm x": NPM,
  bunx: /^(-p|--package)$/,
  "bun x": /^(-p|--package)$/,
  pnpx: /^(-C|--dir|--package|--reporter|--allow-build)$/,
  "pnpm exec": /^(-C|--dir|--filter|-F|--reporter|--workspace-concurrency|--resume-from|--report-summary)$/,
  "pnpm dlx": /^(-C|--dir|--package|--reporter|--allow-build)$/,
  "yarn exec": /^--cwd$/,
  "yarn dlx": /^(-p|--package)$/,
  uvx: UV,
  "uv run": UV,
  "poetry run": /^(-C|--directory|-P|--project)$/,
  "pipenv run": /^$/,
  "pdm run": /^(-p|--project|-L|--lockfile|--venv)$/,
  "conda run": CONDA,
  "mamba run": CONDA,
  "micromamba run": CONDA,
  "bundle exec": /^--gemfile$/,
  "mise exec": /^(-C|--cd|-j|--jobs|-c|--command|-E|--env)$/,
  "mise x": /^(-C|--cd|-j|--jobs|-c|--command|-E|--env)$/,
  "direnv exec": /^$/,
  dotenv: /^(-e|-v|-c|-p)$/,
  "cross-env": /^$/,
  "env-cmd": /^(-f|--file|-r|--rc-file|-e|--environments)$/,
  "docker exec": CONTAINER_EXEC,
  "podman exec": CONTAINER_EXEC,
  "docker run": CONTAINER_RUN,
  "podman run": CONTAINER_RUN,
  "kubectl exec":
    /^(-c|--container|-n|--namespace|--context|-f|--filename|--pod-running-timeout|--kubeconfig|--cluster|--user|-s|--server|--token)$/,
  "nix-shell": /^(-p|--packages|-I|-A|--attr|--option|--arg|--argstr|--run|--command)$/,
  "nix develop": NIX_COMMAND,
  "nix shell": NIX_COMMAND,
  screen: /^(-c|-e|-h|-p|-S|-t|-T|-s|-Logfile)$/,
};

/** Words after a runner's options before its command: the directory, container, image or pod. */
export const RUNNER_POSITIONALS: Record<string, number> = {
  "direnv exec": 1,
  "docker exec": 1,
  "podman exec": 1,
  "docker run": 1,
  "podman run": 1,
  "kubectl exec": 1,
};

/** Options that give a runner a script instead of a command (`npx -c 'git push'`). */
const SCRIPT_OPTIONS: Record<string, RegExp> = {
  npx: /^(-c|--call)$/,
  "npm exec": /^(-c|--call)$/,
  "npm x": /^(-c|--call)$/,
  "mise exec": /^(-c|--command)$/,
  "mise x": /^(-c|--command)$/,
  "nix-shell": /^(--run|--command)$/,
};
/** Flags that make a runner run its command words through a shell (`pnpm exec -c 'git push'`). */
const SHELL_MODE: Record<string, RegExp> = {
  "pnpm exec": /^(-c|--shell-mode)$/,
  "pnpm dlx": /^(-c|--shell-mode)$/,
  pnpx: /^(-c|--shell-mode)$/,
};
/** Runners whose command follows an option (`nix develop -c git push`), none without it. */
const COMMAND_OPTION: Record<string, RegExp> = {
  "nix develop": /^(-c|--command)$/,
  "nix shell": /^(-c|--command)$/,
  "kubectl exec": /^--$/, // options may follow the pod: the command is what follows `--` (if any)
};

/**
 * The runner a command starts with, as `wrappers.ts` peels it: its name (`npm exec` for `npm exec …`) and its
 * words with the subcommand folded into the first; null when it is none.
 *
 * @example
 * ```ts
 * import { runnerOf } from "./runners.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * runnerOf("npm", ["npm", "exec", "--", "git", "push"].map(w))?.name; // "npm exec"
 * ```
 */
export function runnerOf(
  name: string,
  words: readonly ShellWord[],
): { name: string; words: readonly ShellWord[] } | null {
  const sub = words[1];
  if (Object.hasOwn(SUBCOMMANDS, name) && sub !== undefined && !sub.dynamic && SUBCOMMANDS[name].includes(sub.text)) {
    const key = `${name} ${sub.text}`;
    return { name: key, words: [{ ...words[0], text: key, literal: key }, ...words.slice(2)] };
  }
  return Object.hasOwn(RUNNER_OPTIONS, name) ? { name, words } : null;
}

/**
 * What a runner whose options end at `end` runs other than its command words: a script (an option's value, or its
 * command words run through a shell), the command after an option (`nix develop -c`), nothing (null), or something
 * unknown (`screen -X`); undefined when it runs the command words after its options.
 *
 * @example
 * ```ts
 * import { runnerScript } from "./runners.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * runnerScript("npx", ["npx", "-c", "git push"].map(w), 3); // { kind: "script", script: … "git push" }
 * ```
 */
export function runnerScript(
  name: string,
  words: readonly ShellWord[],
  end: number,
): Inner | null | undefined {
  if (name === "screen") return screenSpecial(words, end);
  const script = Object.hasOwn(SCRIPT_OPTIONS, name) ? SCRIPT_OPTIONS[name] : null;
  const shell = Object.hasOwn(SHELL_MODE, name) ? SHELL_MODE[name] : null;
  const option = Object.hasOwn(COMMAND_OPTION, name) ? COMMAND_OPTION[name] : null;
  const at = option === null ? -1 : words.findIndex((w, k) => k > 0 && option.test(w.text));
  if (at > 0) return words.length > at + 1 ? { kind: "command", words: words.slice(at + 1) } : null;
  for (let k = 1; k < Math.min(end, words.length); k++) {
    const t = words[k].text;
    if (script?.test(t)) return { kind: "script", script: words[k + 1] ?? literalWord("") };
    const eq = t.indexOf("=");
    if (eq > 0 && script?.test(t.slice(0, eq))) {
      return { kind: "script", script: wordFrom(words[k], eq + 1) };
    }
    if (shell?.test(t)) return end < words.length ? { kind: "script", script: joinWords(words.slice(end)) } : null;
  }
  return option === null || name === "kubectl exec" ? undefined : null;
}

/** `screen -X CMD` sends a command to a running session (`stuff` types text): unknown; `-r`, `-x`, `-ls`… run none. */
function screenSpecial(words: readonly ShellWord[], end: number): Inner | null | undefined {
  for (let k = 1; k < Math.min(end, words.length); k++) {
    const t = words[k].text;
    if (/^-[a-zA-Z]*X/.test(t)) return { kind: "unknown", why: "screen -X sends a command to a session, unknown here" };
    if (/^(-[a-zA-Z]*[rRxDv]|-ls|-list|-wipe|-Q)$/.test(t)) return null;
  }
  return undefined;
}

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
 * CMD`; `screen [options] CMD…` (`screen -X` sends a command to a session: unknown); the job `at`/`batch` read (a
 * here-document or here-string, else unknown). Null when `name` is none of them.
 *
 * @example
 * ```ts
 * import { sessionRuns } from "./runners.ts";
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
  const name = Object.hasOwn(TMUX_ALIASES, given) ? TMUX_ALIASES[given] : given;
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
