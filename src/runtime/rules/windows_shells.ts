/**
 * Windows' shells, which coding agents on Windows (and PowerShell on any system) run: `cmd /c COMMAND`, `cmd /k`,
 * `powershell -Command …` (`-c`, any case, any prefix PowerShell accepts), `pwsh -c`. The command is read as a
 * command line: simple commands and `&&`, `||`, `|`, `;` read the same; what the POSIX reading cannot parse fails
 * closed, and an `-EncodedCommand` is unknown. PowerShell's own language (`Invoke-Expression`, `Start-Process`) is
 * an interpreter's, not read (docs/rules.md).
 *
 * @module
 */
import { joinWords, literalWord, type ShellWord, wordFrom } from "./shell.ts";
import type { Inner } from "./wrappers.ts";

/** `cmd [/a /u /q /d /s /e:on /f:on /v:on…] /c COMMAND…` (or `/k`): the words after `/c`, joined. */
function cmdInner(words: readonly ShellWord[]): Inner | null {
  for (let k = 1; k < words.length; k++) {
    const t = words[k].text;
    if (words[k].dynamic && !/^\/[a-z]/i.test(words[k].literal)) {
      return { kind: "unknown", why: `cmd gets ${t}, unknown until it runs` };
    }
    const m = /^\/[ck](.*)$/is.exec(t);
    if (m === null) continue;
    const rest = [...(m[1] !== "" ? [wordFrom(words[k], 2)] : []), ...words.slice(k + 1)];
    return rest.length > 0 ? { kind: "script", script: joinWords(rest) } : null;
  }
  return null;
}

/** PowerShell's parameters that take a value (their full names: any prefix of one names it). */
const PS_VALUE = [
  "executionpolicy",
  "windowstyle",
  "workingdirectory",
  "configurationname",
  "outputformat",
  "inputformat",
  "version",
  "psconsolefile",
  "custompipename",
  "settingsfile",
  "encodedarguments",
];

/** The parameter a PowerShell option word names (`-Com` → `command`, `-enc` → `encodedcommand`), or null. */
function psParameter(t: string): string | null {
  const m = /^[-/]([a-z]+)(?::.*)?$/is.exec(t);
  if (m === null) return null;
  const p = m[1].toLowerCase();
  if (p === "c" || "command".startsWith(p) && p.length > 1) return "command";
  if (p === "e" || p === "ec" || "encodedcommand".startsWith(p) && p.length > 1) return "encodedcommand";
  if (p === "f" || "file".startsWith(p) && p.length > 1) return "file";
  return PS_VALUE.find((v) => v.startsWith(p) && p.length > 1) ?? p;
}

/** `powershell|pwsh [options] -Command …`: the words after it; `-File F` runs a file; `powershell …` a command. */
function powershellInner(name: string, words: readonly ShellWord[]): Inner | null {
  for (let k = 1; k < words.length; k++) {
    const w = words[k];
    if (w.dynamic && !/^[-/]/.test(w.literal)) {
      return { kind: "unknown", why: `${name} gets ${w.text}, unknown until it runs` };
    }
    const p = psParameter(w.text);
    if (p === null || w.text === "-") {
      // A first word that is no parameter: a command for Windows PowerShell, a script file for pwsh.
      return name === "pwsh" ? { kind: "file", file: w } : { kind: "script", script: joinWords(words.slice(k)) };
    }
    if (p === "command") {
      const rest = words.slice(k + 1);
      if (rest.length === 1 && rest[0].text === "-") return { kind: "stdin" };
      return { kind: "script", script: rest.length > 0 ? joinWords(rest) : literalWord("") };
    }
    if (p === "encodedcommand") {
      return { kind: "unknown", why: `${name} ${w.text} runs an encoded command, not read here` };
    }
    if (p === "file") return words[k + 1] ? { kind: "file", file: words[k + 1] } : null;
    if (PS_VALUE.includes(p) && !w.text.includes(":")) k++;
  }
  return null;
}

/**
 * What a Windows shell runs (`cmd`, `powershell`, `pwsh`); undefined when `name` is none. `CMD.EXE` and
 * `powershell.exe` are these names to deny and ask rules, as every program is once `unwrap.ts` reads its name in
 * lower case without `.exe`.
 *
 * @example
 * ```ts
 * import { windowsShellInner } from "./windows_shells.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * windowsShellInner("cmd", ["cmd", "/c", "git", "push"].map(w)); // { kind: "script", script: … "git push" }
 * ```
 */
export function windowsShellInner(name: string, words: readonly ShellWord[]): Inner | null | undefined {
  if (name === "cmd") return cmdInner(words);
  if (name === "powershell" || name === "pwsh") return powershellInner(name, words);
  return undefined;
}
