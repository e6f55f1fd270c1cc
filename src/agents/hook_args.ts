/**
 * The arguments of a registered `noema hook <agent> …` command, read back
 * from the agent's settings so that installing again keeps what was
 * registered (`--policy` files, `--print`) unless told otherwise.
 *
 * @module
 */

/**
 * Splits a POSIX shell command line into words (single and double quotes,
 * backslash escapes), as `noemaCommand` quotes them.
 *
 * @example
 * ```ts
 * import { shellWords } from "./hook_args.ts";
 * shellWords("'/a b/noema' hook gemini --policy '/p q.ts'"); // ["/a b/noema", "hook", "gemini", "--policy", "/p q.ts"]
 * ```
 */
export function shellWords(text: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      word = (word ?? "") + text.slice(i + 1, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end;
    } else if (c === '"') {
      let j = i + 1;
      let part = "";
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === "\\" && j + 1 < text.length && '"\\$`'.includes(text[j + 1])) j++;
        part += text[j];
      }
      word = (word ?? "") + part;
      i = j;
    } else if (c === "\\" && i + 1 < text.length) {
      word = (word ?? "") + text[++i];
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else word = (word ?? "") + c;
  }
  if (word !== null) words.push(word);
  return words;
}

/** What a `noema hook` registration says besides the agent. */
export interface HookArgs {
  policies: string[];
  print: boolean;
  /** Other arguments, kept as they are. */
  rest: string[];
}

/**
 * The arguments after `hook <agent>` in a registered command, or null when
 * it is not one.
 *
 * @example
 * ```ts
 * import { parseHookArgs } from "./hook_args.ts";
 * parseHookArgs("/bin/noema hook gemini --policy /p.ts --print", "gemini"); // { policies: ["/p.ts"], print: true, rest: [] }
 * ```
 */
export function parseHookArgs(command: string, agent: string): HookArgs | null {
  const words = shellWords(command);
  const at = words.findIndex((w, i) => w === "hook" && words[i + 1] === agent);
  if (at < 0) return null;
  const args: HookArgs = { policies: [], print: false, rest: [] };
  const tail = words.slice(at + 2);
  for (let i = 0; i < tail.length; i++) {
    const w = tail[i];
    if (w === "||") break; // a portable registration's `|| exit 2`
    if (w === "--policy" && i + 1 < tail.length) args.policies.push(tail[++i]);
    else if (w.startsWith("--policy=")) args.policies.push(w.slice("--policy=".length));
    else if (w === "--print") args.print = true;
    else args.rest.push(w);
  }
  return args;
}

/**
 * The arguments to register: each option given replaces what was
 * registered (`policy: false` removes the policies, `print: false` the
 * `--print`); an option not given keeps it.
 *
 * @example
 * ```ts
 * import { mergeHookArgs } from "./hook_args.ts";
 * mergeHookArgs({ policies: ["/p.ts"], print: false, rest: [] }, { print: true }); // ["--policy", "/p.ts", "--print"]
 * ```
 */
export function mergeHookArgs(
  registered: HookArgs | null,
  given: { policies?: string[] | false; print?: boolean },
): string[] {
  const policies = given.policies === false ? [] : given.policies ?? registered?.policies ?? [];
  const print = given.print ?? registered?.print ?? false;
  return [...policies.flatMap((p) => ["--policy", p]), ...(print ? ["--print"] : []), ...(registered?.rest ?? [])];
}
