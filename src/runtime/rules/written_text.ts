/**
 * The text `echo` and `printf` write, as bash and dash write it: their backslash escapes (octal `\NNN`, echo's
 * `\0NNN`, `\xHH`, `\uHHHH`, `\c`) and printf's `%%`, `%s` and `%b`. bash's echo keeps backslashes unless given
 * `-e`; dash's echo decodes them always and takes no option but `-n`; dash's printf knows no `\x` nor `\u`. Each
 * reading is kept (a line may run under either shell); a form neither is known to write the same way makes the text
 * unknown (null), so a script made of it fails closed (`written_scripts.ts`).
 *
 * @module
 */
import type { ShellWord } from "./shell.ts";

/** Which shell's builtin writes the text, and whether it reads a format (`printf`) or an argument (`echo`, `%b`). */
interface Dialect {
  shell: "bash" | "dash";
  /** `format`: printf's format; `echo`: bash's `echo -e`; `b`: printf's `%b` argument and dash's echo. */
  mode: "format" | "echo" | "b";
}

/** What decoding a text gives: the text, whether a `\c` ended all output, or null for a form not modelled. */
type Decoded = { text: string; stop: boolean } | null;

/** The single-letter escapes both shells' printf and echo decode. */
const LETTERS: Record<string, string> = {
  a: "\x07",
  b: "\b",
  e: "\x1b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  "\\": "\\",
};

/** Characters after a backslash that no escape of either shell uses: both write the backslash and the character. */
const KEPT = /[^0-9a-zA-Z\\'"?]/;

/** An octal escape's value: `\0NNN` (echo, `%b`) or `\NNN` (a format, bash's `%b`, dash's echo). */
function octal(text: string, at: number, d: Dialect): { value: number; end: number } | null {
  const zeroLead = text[at] === "0" && d.mode !== "format";
  if (d.mode === "echo" && !zeroLead) return null;
  const start = zeroLead ? at + 1 : at;
  let end = start;
  while (end < start + 3 && /[0-7]/.test(text[end] ?? "")) end++;
  if (end === start) return zeroLead ? { value: 0, end } : null;
  return { value: parseInt(text.slice(start, end), 8) & 0xff, end };
}

/** A hexadecimal escape's value (bash's `\xHH`, `\uHHHH`, `\UHHHHHHHH`): null beyond ASCII. */
function hex(text: string, at: number): { value: number; end: number } | null {
  const width = text[at] === "x" ? 2 : text[at] === "u" ? 4 : 8;
  let end = at + 1;
  while (end < at + 1 + width && /[0-9a-fA-F]/.test(text[end] ?? "")) end++;
  if (end === at + 1) return null;
  const value = parseInt(text.slice(at + 1, end), 16);
  // Beyond ASCII, what bash writes for \u depends on the locale.
  return text[at] !== "x" && value > 0x7f ? null : { value, end };
}

/** Decodes a text's backslash escapes as `d` does; null when it holds a form not modelled here. */
function decode(text: string, d: Dialect): Decoded {
  let out = "";
  for (let k = 0; k < text.length; k++) {
    if (text[k] !== "\\" || k === text.length - 1) {
      out += text[k];
      continue;
    }
    const c = text[k + 1];
    if (c === "c") {
      if (d.mode === "format") return null; // kept by both, yet only verified as part of %b
      return { text: out, stop: true };
    }
    if (d.shell === "dash" && /[xuU]/.test(c)) {
      out += "\\" + c; // dash knows no \x nor \u: it writes them as they are
      k++;
      continue;
    }
    const num = /[0-7]/.test(c) ? octal(text, k + 1, d) : /[xuU]/.test(c) ? hex(text, k + 1) : undefined;
    if (num === null) return null;
    if (num !== undefined) {
      out += String.fromCharCode(num.value);
      k = num.end - 1;
    } else if (Object.hasOwn(LETTERS, c)) {
      out += LETTERS[c];
      k++;
    } else if (c === '"' && d.mode === "format") {
      out += d.shell === "bash" ? c : "\\" + c; // dash's printf keeps the backslash
      k++;
    } else if (KEPT.test(c)) {
      out += "\\" + c;
      k++;
    } else return null;
  }
  return { text: out, stop: false };
}

/** The text printf writes for a format and arguments as `shell` does; null when it holds a form not modelled. */
function printfText(format: string, args: readonly string[], shell: Dialect["shell"]): string | null {
  let out = "";
  let next = 0;
  do {
    const start = next;
    const parts = format.split(/(%.)/s);
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      if (i % 2 === 0) {
        if (part.includes("%")) return null; // a lone % at the end: an error
        const text = decode(part, { shell, mode: "format" });
        if (text === null) return null;
        out += text.text;
      } else if (part === "%%") out += "%";
      else if (part === "%s") out += args[next++] ?? "";
      else if (part === "%b") {
        const text = decode(args[next++] ?? "", { shell, mode: "b" });
        if (text === null) return null;
        out += text.text;
        if (text.stop) return out;
      } else return null; // another conversion (%d, %5s, %q): not modelled
    }
    if (next === start) break; // a format that takes no argument is written once
  } while (next < args.length);
  return out;
}

/** The texts `printf` writes (bash's, and dash's when it differs), or null when one is not known here. */
export function printfTexts(args: readonly ShellWord[]): string[] | null {
  if (args.length === 0 || args.some((w) => w.dynamic) || args[0].text.startsWith("-")) return null;
  const texts = (["bash", "dash"] as const).map((s) => printfText(args[0].text, args.slice(1).map((w) => w.text), s));
  return distinct(texts);
}

/** The texts `echo` writes: bash's (`-n`, `-e`, `-E`), dash's (escapes always, `-n` its one option); null unknown. */
export function echoTexts(args: readonly ShellWord[]): string[] | null {
  if (args.some((w) => w.dynamic)) return null;
  let k = 0, escapes = false, newline = true;
  for (; k < args.length && /^-[neE]+$/.test(args[k].text); k++) {
    for (const f of args[k].text.slice(1)) {
      if (f === "n") newline = false;
      else escapes = f === "e";
    }
  }
  const words = args.slice(k).map((w) => w.text).join(" ");
  const bash = escapes ? decode(words, { shell: "bash", mode: "echo" }) : { text: words, stop: false };
  const dashNewline = args[0]?.text !== "-n";
  const dashWords = args.slice(dashNewline ? 0 : 1).map((w) => w.text).join(" ");
  const dash = decode(dashWords, { shell: "dash", mode: "b" });
  const text = (d: Decoded, nl: boolean) => d === null ? null : d.text + (nl && !d.stop ? "\n" : "");
  return distinct([text(bash, newline), text(dash, dashNewline)]);
}

/** The readings, each once; null when one is unknown. */
function distinct(texts: (string | null)[]): string[] | null {
  if (texts.some((t) => t === null)) return null;
  return [...new Set(texts as string[])];
}

/**
 * The texts a command writes to its standard output when they are known: `echo`, `printf`, `cat`/`tee` of a
 * here-document (each reading of bash and dash once), or null.
 *
 * @example
 * ```ts
 * import { outputTexts } from "./written_text.ts";
 * const w = (text: string) => ({ text, dynamic: false, literal: text });
 * outputTexts("printf", ["r\\155 x"].map(w), undefined); // ["rm x"]
 * outputTexts("echo", ["r\\0155 x"].map(w), undefined); // ["r\\0155 x\n", "rm x\n"]
 * ```
 */
export function outputTexts(name: string, args: readonly ShellWord[], heredoc: ShellWord | undefined): string[] | null {
  if (name === "echo") return echoTexts(args);
  if (name === "printf") return printfTexts(args);
  if ((name === "cat" || name === "tee") && heredoc !== undefined && !heredoc.dynamic) {
    return name === "cat" && args.some((w) => w.text !== "-") ? null : [heredoc.text];
  }
  return null;
}
