/**
 * What `noema rules test --command LINE` decides, in-process, on 10,000
 * generated 1 KB shell lines: compound commands with wrappers (`env -i`,
 * `nice`, `timeout`, `FOO=$(…)`), quoting (`'…'`, `"…"`, `$'…'`, `$"…"`),
 * substitutions, pipes, redirections, `sh -c` scripts and here-strings,
 * against a rule set of deny, ask and allow `Bash` rules (and a `Read` rule).
 * Each line is timed on its own; the table shows the median (and p99).
 *
 * Rows (all in the same run, on the same lines, after one unmeasured pass):
 * - the decision: `rulesVerdict` (what `rules test` and every hook call run);
 *   goal **≤ 0.2 ms median**;
 * - baseline: `parseShell` alone (reading the line, no unwrapping or rules);
 * - `commandUnits` (reading and peeling wrappers, no rules): informational.
 *
 *     bun bench/rules.ts [--lines 10000]
 *
 * @module
 */
import process from "node:process";
import { mulberry32 as prng } from "../tests/helpers/prng.ts";
import { rulesVerdict } from "../src/runtime/rules/policy.ts";
import { toLayer } from "../src/runtime/rules/schema.ts";
import { parseShell } from "../src/runtime/rules/shell.ts";
import { commandUnits } from "../src/runtime/rules/unwrap.ts";
import type { PolicyState } from "../src/plugins/api.ts";
import { type BenchReport, fixed, flag, type Measure, median, runStandalone } from "./lib.ts";

const PIECES: ((r: () => number) => string)[] = [
  (r) => `cd src/module${Math.floor(r() * 100)}`,
  (r) => `FOO=$(date +%s) nice -n 5 npm run test -- --grep 'case ${Math.floor(r() * 1000)}'`,
  () => `git -C . status --short | grep -v '^??' | wc -l`,
  (r) => `env -i PATH=/usr/bin:/bin timeout 30 make -j4 target${Math.floor(r() * 50)} 2>&1 | tee build.log`,
  () => `echo "$(git rev-parse HEAD) $(date -u +%FT%TZ)" >> .noema/log.txt`,
  () => `find . -name '*.ts' -not -path './node_modules/*' -exec grep -l "TODO" {} \\;`,
  (r) => `sh -c 'for f in a b c; do echo "$f" ${Math.floor(r() * 9)}; done'`,
  () => `$'ls' -la $"docs" | sort -k5 -n | head -20`,
  () => `bash --noprofile -c "python3 -m pytest -q tests/test_x.py::test_y"`,
  () => `cat <<< "$(jq -r '.version' package.json)" > VERSION`,
  (r) => `[ -f config/${Math.floor(r() * 10)}.json ] && node scripts/check.js --strict || exit 1`,
  () => `stdbuf -oL xargs -n 1 echo < files.txt`,
];

/** A line of about `bytes` bytes: pieces joined by `&&`, `;`, `||` or `|`, cut at a piece. */
function line(r: () => number, bytes: number): string {
  let s = "";
  while (s.length < bytes) {
    const piece = PIECES[Math.floor(r() * PIECES.length)](r);
    if (s.length + piece.length + 4 > bytes && s.length > bytes * 0.9) break;
    s += s === "" ? piece : ` ${["&&", ";", "||", "|"][Math.floor(r() * 4)]} ${piece}`;
  }
  return s.slice(0, bytes).replace(/[^;&| ]*$/, "true");
}

/** Per-line times, in ms, of `f` over the lines. */
function times(lines: readonly string[], f: (l: string) => unknown): number[] {
  const out = new Array<number>(lines.length);
  for (let i = 0; i < lines.length; i++) {
    const t = performance.now();
    f(lines[i]);
    out[i] = performance.now() - t;
  }
  return out;
}

const p99 = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)];

/** Runs the benchmark and returns its table. */
export function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const count = Number(flag(args, "lines") ?? 10_000);
  const r = prng(37);
  const lines = Array.from({ length: count }, () => line(r, 1024));
  const layer = toLayer({
    deny: ["Bash(git push:*)", "Bash(rm -rf:*)", "Bash(curl:*)", "Read(./.env)"],
    ask: ["Bash(npm publish:*)"],
    allow: ["Bash(ls:*)", "Bash(git status:*)", "Bash(echo:*)"],
    default: "allow",
  }, { source: "bench/noema.jsonc", field: "rules", base: "/work/app" });
  const decide = (command: string) =>
    rulesVerdict([layer], { kind: "tool", tool: "Bash", input: { command }, command } as PolicyState["action"], "/w");
  for (const l of lines) decide(l); // warm up: compiled patterns and the JIT
  const parse = times(lines, (l) => parseShell(l));
  const units = times(lines, (l) => commandUnits(l));
  const decided = times(lines, decide);
  const verdicts = lines.map(decide).filter((v) => v !== undefined).length;
  const ms = (x: number) => fixed(x, 4);
  const goal = median(decided) <= 0.2;
  const measures: Measure[] = [
    {
      measure: "rules test decision, 1 KB line (ms, median)",
      value: ms(median(decided)),
      baseline: `parse ${ms(median(parse))}`,
      ratio: `${fixed(median(decided) / median(parse))}×`,
      goal: "≤ 0.2 ms",
      met: goal ? "yes" : "NO",
    },
    {
      measure: "commandUnits: parse + unwrap (ms, median)",
      value: ms(median(units)),
      baseline: `parse ${ms(median(parse))}`,
      ratio: `${fixed(median(units) / median(parse))}×`,
      goal: "none",
      met: "-",
    },
  ];
  const table = {
    title: `rules: deciding ${count} generated 1 KB shell lines in-process`,
    columns: ["measure", "median (ms)", "p99 (ms)"],
    rows: [
      ["parseShell (baseline)", ms(median(parse)), ms(p99(parse))],
      ["commandUnits (parse + unwrap)", ms(median(units)), ms(p99(units))],
      ["rulesVerdict (the decision; goal ≤ 0.2 ms median)", ms(median(decided)), ms(p99(decided))],
    ],
    notes: [
      `${verdicts} of ${count} lines vetoed or asked about; mean line ${
        Math.round(lines.reduce((a, l) => a + l.length, 0) / count)
      } bytes; one warm-up pass, then each line timed on its own`,
    ],
  };
  return Promise.resolve({ name: "rules", tables: [table], ok: goal, measures });
}

if (import.meta.main) await runStandalone(main);
