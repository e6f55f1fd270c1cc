/**
 * Random compositions of the shell grammar around a command that must be
 * denied: quoting styles of its words, wrappers that run it, scripts that
 * embed it (`sh -c`, `eval`, `env -S`, here-strings, substitutions…),
 * redirections and separators. Seeded, so a failure is reproducible from its
 * seed. Every composition runs the command when the shell runs the line (or
 * would, were the wrapper installed and allowed).
 *
 * @module
 */
import { mulberry32 } from "./prng.ts";

/** The seeded generator the compositions take (mulberry32). */
export const prng: (seed: number) => () => number = mulberry32;

type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

/** Single quotes, with `'\''` for a quote inside. */
export const sq = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
/** Double quotes, `"`, `\`, `$` and backquotes escaped. */
export const dq = (s: string) => `"${s.replace(/["\\$`]/g, (c) => `\\${c}`)}"`;
/** ANSI-C quotes. */
export const ansi = (s: string) => `$'${s.replace(/['\\]/g, (c) => `\\${c}`)}'`;
/** Locale quotes (`$"…"`). */
export const locale = (s: string) => `$${dq(s)}`;

/** Ways to write one word so the shell passes it unchanged. */
const WORD_STYLES: ((w: string) => string)[] = [
  (w) => w,
  sq,
  dq,
  ansi,
  locale,
  (w) => [...w].map((c) => `\\${c}`).join(""),
  (w) => w.length > 1 ? `${w[0]}${sq(w.slice(1))}` : w,
  (w) => w.length > 1 ? `${dq(w.slice(0, 1))}${w.slice(1)}` : w,
  (w) => `$'${[...w].map((c) => `\\x${c.charCodeAt(0).toString(16)}`).join("")}'`,
];

/** Ways to write the program name: as a word, or a path the shell finds it by (`/usr/b?n/git`). */
function program(r: Rand, name: string, dir: string): string {
  const style = pick(r, WORD_STYLES);
  switch (Math.floor(r() * 6)) {
    case 0:
      return `${dir}/${name}`;
    case 1:
      return `${dir.replace(/\/([^/])[^/]([^/]*)$/, "/$1?$2")}/${name}`; // a ? in the last dir: /usr/b?n
    case 2:
      return `${dir.replace(/^\/([^/])/, "/$1*")}/${name}`; // a * in the first dir
    default:
      return style(name);
  }
}

/** Wrappers that run the simple command after them. */
const WRAPPERS = [
  "env ",
  "env -i PATH=$PATH ",
  "env - PATH=$PATH ",
  "env -u X ",
  "nice ",
  "nice -n 5 ",
  "nohup ",
  "timeout 30 ",
  "timeout -s KILL 30 ",
  "sudo ",
  "sudo -u root ",
  "doas ",
  "time ",
  "time -p ",
  "command ",
  "builtin ",
  "exec ",
  "exec -a x ",
  "stdbuf -oL ",
  "setsid ",
  "ionice -c 3 ",
  "chroot / ",
  "unshare -r ",
  "xargs ",
  "xargs -0 ",
  "flock /tmp/l ",
  "FOO=1 ",
  "FOO=$(date) ",
  "A=`date` B=2 ",
  "strace -f -o /dev/null ",
  "strace -fo /dev/null ",
  "sudo -iu root ",
  "nice -n5 ",
  "runuser -u root -- ",
  "setpriv --no-new-privs ",
  "prlimit --nofile=1024 ",
  "fakeroot -- ",
  "faketime 2020-01-01 ",
  "ltrace -o /dev/null ",
  "gosu ci ",
  "taskset 1 ",
  "busybox ",
  "! ",
];

const hasHeredoc = (s: string) => /<<[^<]/.test(s);
/** The text, then a newline when it ends with a here-document (its delimiter must end a line). */
const nl = (s: string) => hasHeredoc(s) ? `${s}\n` : s;
/** The text as a command in a list: `;` after it, or a newline after a here-document. */
const term = (s: string) => hasHeredoc(s) ? `${s}\n` : `${s};`;
let delimiters = 0;
const delim = () => `E${++delimiters}`;

/** Wrappers that take the whole (possibly compound) text as a script. */
const SCRIPTS: ((s: string, r: Rand) => string)[] = [
  (s, r) => `sh -c ${pick(r, [sq, dq, ansi])(s)}`,
  (s, r) => `bash --rcfile /dev/null -c ${pick(r, [sq, dq])(s)}`,
  (s, r) => `bash --init-file /dev/null -c ${pick(r, [sq, dq])(s)}`,
  (s, r) => `bash -lc ${pick(r, [sq, dq, ansi])(s)}`,
  (s) => `dash -e -c ${sq(s)} x`,
  (s, r) => `zsh -o pipefail -c ${pick(r, [sq, dq])(s)}`,
  (s, r) => `eval ${pick(r, [sq, dq])(s)}`,
  (s) => `env -S${sq(s)}`,
  (s) => `env -iS${dq(s)}`,
  (s) => `env --split-string=${sq(s)}`,
  (s) => `flock /tmp/l -c ${sq(s)}`,
  (s) => `su -c ${sq(s)}`,
  (s) => `sg root ${sq(s)}`,
  (s) => `echo ${sq(s)} | xargs -I{} sh -c '{}'`,
  (s) => `parallel ::: ${sq(s)}`,
  (s) => `script -qc ${sq(s)} /dev/null`,
  (s) => `ssh -p 22 host ${sq(s)}`,
  (s) => `watch ${sq(s)}`,
  (s) => `bash <<< ${sq(s)}`,
  (s) => `source /dev/stdin <<< ${dq(s)}`,
  (s) => `. /dev/stdin <<< ${sq(s)}`,
  (s) => {
    const d = delim();
    return `bash -s <<'${d}'\n${s}\n${d}`;
  },
  (s) => {
    const d = delim();
    return `sh <<${d}\n${s.replace(/[$`\\]/g, (c) => `\\${c}`)}\n${d}`;
  },
  (s) => `echo $( ${nl(s)})`,
  (s) => `echo "$( ${nl(s)})"`,
  (s) => `echo $(( $( ${nl(s)}) ))`,
  (s) => `cat <(${nl(s)})`,
  (s) => `x=$( ${nl(s)})`,
  (s) => `echo \${X:-$( ${nl(s)})}`,
  (s) => `coproc NAME { ${term(s)} }`,
  (s) => `coproc ${s}`,
  (s) => `{ ${term(s)} }`,
  (s) => `(${nl(s)})`,
  (s) => `if true; then ${term(s)} fi`,
  (s) => `for i in 1; do ${term(s)} done`,
  (s) => `while ${term(s)} do break; done`,
  (s) => `f() { ${term(s)} }; f`,
  (s) => `trap ${sq(s)} EXIT`,
  (s) => `alias p=${sq(s)}`,
  (s) => `shopt -s expand_aliases\nalias p=${sq(s)}\np`,
  (s) => `let ${sq(`a[$( ${nl(s)})]`)}`,
  (s) => `X=${sq(`a[$( ${nl(s)})]`)}; echo $((X))`,
  (s) => `printf -v ${sq(`a[$( ${nl(s)})]`)} x`,
  (s) => `PS4=${sq(`$( ${nl(s)})`)} bash -xc :`,
  (s) => `GIT_PAGER=${sq(s)} git log`,
  (s) => `BASH_ENV=<(echo ${sq(s)}) bash -c :`,
  (s) => `mapfile -C ${sq(s)} -c 1 <<< x`,
  (s) => `script -q -c${sq(s)} /dev/null`,
  (s) => `ssh -o ProxyCommand=${sq(s)} host`,
  (s) => `bash <(echo ${sq(s)})`,
  (s) => `source <(echo ${sq(s)})`,
  (s) => `. <(echo ${sq(s)})`,
  (s) => `echo ${sq(s)} | sh`,
  (s) => `printf '%s' ${sq(s)} | bash -s`,
];

/** Separators and neighbours that leave the command running (a here-document is grouped first). */
const AROUND: ((s: string) => string)[] = [
  (s) => `ls && ${s}`,
  (s) => `false || ${s}`,
  (s) => `cd /tmp; ${s}`,
  (s) => `true\n${s}`,
  (s) => `ls \\\n&& ${s}`,
  (s) => `# c\n${s}`,
  (s) => `${s} &`,
  (s) => `${s} | cat`,
  (s) => `echo x | ${s}`,
  (s) => `${s} 2>/dev/null`,
  (s) => `${s} >/tmp/out 2>&1`,
  (s) => `${s} < /dev/null`,
];

/** Whether a text is one simple command (a wrapper may go before it). */
const isSimple = (s: string) => !/[;&|\n(){}]|<<|^!|^then /.test(s.replace(/'[^']*'|"(\\.|[^"\\])*"/g, ""));

/**
 * One random line that runs `words` (a denied command, e.g. `["git", "push"]`), nesting up to `depth` times.
 *
 * @example
 * ```ts
 * import { compose, prng } from "./helpers/shell_compose.ts";
 * compose(prng(1), ["git", "push"], "/usr/bin", 3);
 * ```
 */
export function compose(r: Rand, words: readonly string[], dir: string, depth: number): string {
  delimiters = 0;
  let s = [program(r, words[0], dir), ...words.slice(1).map((w) => pick(r, WORD_STYLES)(w))].join(" ");
  const steps = 1 + Math.floor(r() * depth);
  for (let k = 0; k < steps; k++) {
    const choice = r();
    if (choice < 0.4 && isSimple(s)) s = pick(r, WRAPPERS) + s;
    else if (choice < 0.8) s = pick(r, SCRIPTS)(s, r);
    else s = pick(r, AROUND)(hasHeredoc(s) ? `(${s}\n)` : s);
  }
  return s;
}
