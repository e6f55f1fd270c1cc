/**
 * Runners of a command in an environment of theirs, read from the table in `runner_table.ts`: package runners
 * (`npx git push`, `npm exec -- git push`, `pnpm exec`, `pnpm git push`, `bun run`, `uv run`…), version managers
 * (`mise exec node@20 -- …`, `asdf exec`, `nvm exec`), secret and environment loaders (`op run --`, `doppler run`,
 * `aws-vault exec PROFILE --`, `dotenv --`), containers and machines (`docker exec CONTAINER`, `docker compose exec
 * SERVICE`, `kubectl exec POD --`, `lxc exec`), remote shells (`vagrant ssh -c`, `heroku run`), Nix, and the scripts
 * some take instead (`npx -c '…'`, `pnpm exec -c`, `nix-shell --run '…'`, `bun exec '…'`). `wrappers.ts` peels
 * them as it peels `nice`.
 *
 * @module
 */
import { joinWords, literalWord, type ShellWord, wordFrom } from "./shell.ts";
import { PNPM_COMMANDS, RUNNER_GLOBALS, RUNNERS } from "./runner_table.ts";
import type { Inner } from "./wrappers.ts";
import { ownEntry } from "../../json.ts";

/** The runners' options that take a value, by name, for `wrapper_table.ts`. */
export const RUNNER_OPTIONS: Record<string, RegExp> = Object.fromEntries(
  Object.entries(RUNNERS).map(([name, r]) => [name, r.values]),
);
/** The runners' options that take two values, by name, for `wrapper_table.ts`. */
export const RUNNER_PAIRS: Record<string, RegExp> = Object.fromEntries(
  Object.entries(RUNNERS).flatMap(([name, r]) => r.pairs ? [[name, r.pairs]] : []),
);
/** How many words follow the runners' options before their commands, by name, for `wrapper_table.ts`. */
export const RUNNER_POSITIONALS: Record<string, number> = Object.fromEntries(
  Object.entries(RUNNERS).flatMap(([name, r]) => r.positionals ? [[name, r.positionals]] : []),
);

/** Names some runner's name starts with (`docker`, `docker compose`): a subcommand word may follow them. */
const PREFIXES: ReadonlySet<string> = new Set(
  Object.keys(RUNNERS).flatMap((name) => name.split(" ").slice(0, -1).map((_, k, a) => a.slice(0, k + 1).join(" "))),
);

/** Where the next subcommand word is after `prefix`'s own options from `i` on (`docker -H x exec`). */
function skipGlobals(prefix: string, words: readonly ShellWord[], i: number): number {
  const values = ownEntry(RUNNER_GLOBALS, prefix) ?? null;
  while (i < words.length && words[i].text.startsWith("-") && words[i].text !== "--" && !words[i].dynamic) {
    i += values?.test(words[i].text) ? 2 : 1;
  }
  return i;
}

/**
 * The runner a command starts with: its name (`docker compose exec` for `docker -H x compose -f f.yml exec …`) and
 * its words, the program and subcommand words folded into the first (the options before them dropped); null when it
 * is none. pnpm runs a first word that is none of its commands as `pnpm exec` does.
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
  if (!PREFIXES.has(name)) return Object.hasOwn(RUNNERS, name) ? { name, words } : null;
  let prefix = name, i = 1;
  for (;;) {
    i = skipGlobals(prefix, words, i);
    const sub = words[i];
    if (sub === undefined || sub.dynamic) return null;
    const key = `${prefix} ${sub.text}`;
    if (Object.hasOwn(RUNNERS, key)) {
      return { name: key, words: [{ ...words[0], text: key, literal: key }, ...words.slice(i + 1)] };
    }
    if (prefix === "pnpm" && !sub.text.startsWith("-") && !PNPM_COMMANDS.has(sub.text)) {
      return {
        name: "pnpm exec",
        words: [{ ...words[0], text: "pnpm exec", literal: "pnpm exec" }, ...words.slice(i)],
      };
    }
    if (!PREFIXES.has(key)) return null;
    prefix = key;
    i++;
  }
}

/**
 * What a runner whose options end at `end` runs other than its command words: a script (an option's value, its
 * command words run through a shell, or its words read as one), the command after a word (`nix develop -c`),
 * nothing (null), or something unknown (`screen -X`); undefined when it runs the command words after its options.
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
  const runner = RUNNERS[name];
  const option = runner.commandAfter;
  const at = option === undefined ? -1 : words.findIndex((w, k) => k > 0 && option.test(w.text));
  if (at > 0) return words.length > at + 1 ? { kind: "command", words: words.slice(at + 1) } : null;
  const last = runner.interspersed ? words.findIndex((w, k) => k > 0 && w.text === "--") : end;
  for (let k = 1; k < Math.min(last === -1 ? words.length : last, words.length); k++) {
    const t = words[k].text;
    if (runner.script?.test(t)) return { kind: "script", script: words[k + 1] ?? literalWord("") };
    const eq = t.indexOf("=");
    if (eq > 0 && runner.script?.test(t.slice(0, eq))) {
      return { kind: "script", script: wordFrom(words[k], eq + 1) };
    }
    if (runner.shell?.test(t)) {
      return end < words.length ? { kind: "script", script: joinWords(words.slice(end)) } : null;
    }
  }
  if (name === "scl enable" && end + 1 < words.length) return { kind: "script", script: words.at(-1)! };
  if (runner.scriptWords) return end < words.length ? { kind: "script", script: joinWords(words.slice(end)) } : null;
  return option === undefined || runner.orWords ? undefined : null;
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
