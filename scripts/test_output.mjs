/**
 * Reads what one test runner printed for one test file (`deno test` or `bun test`, as `npm test` runs each file) and
 * counts its tests from the lines each finished test printed, so a file killed half way still counts the tests that
 * finished: each runner prints one line per test as it ends, and its closing summary only if it was not killed.
 *
 * A test is a leaf: a `describe` counts its tests, not itself (Bun's own count; Deno's summary counts a `describe`
 * as one test with steps, so its lines are counted instead).
 *
 * @module
 */

/** How many lines of each failure's error are kept. */
export const ERROR_LINES = 16;

// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

/**
 * @typedef {{ passed: number, failed: number, names: string[], errors: string[], last?: string }} Counts
 * `names`: each failed test, as "<file> => <name>" (Deno) or "<file>: <name>" (Bun); `errors`: each failure's name
 * and the first lines of what it threw; `last`: the name of the last test that finished.
 */

/** Deno's " ERRORS " section: each failed test's name line and the first lines of what it threw. */
function denoErrors(plain) {
  const start = plain.indexOf("\n ERRORS \n"), end = plain.indexOf("\n FAILURES \n", start);
  if (start < 0) return [];
  const blocks = [];
  for (const line of plain.slice(start + 10, end < 0 ? undefined : end).split("\n")) {
    if (/ => \S+:\d+:\d+$/.test(line)) blocks.push([line]);
    else if (blocks.length && line.trim()) blocks.at(-1).push(line);
  }
  return blocks.map((b) => b.slice(0, ERROR_LINES + 1).join("\n"));
}

/**
 * Counts the tests in `deno test --parallel` output: each finished test or step prints
 * "<file> => <describe> ... <test> ... ok (12ms)" (or "FAILED (12ms)"); a describe prints its own line after its
 * tests, and is not counted.
 *
 * @example
 * ```js
 * parseDeno("./tests/a.test.ts => g ... t ... ok (1ms)\n./tests/a.test.ts => g ... ok (2ms)\n").passed; // 1
 * ```
 * @param {string} out
 * @returns {Counts}
 */
export function parseDeno(out) {
  const plain = out.replace(ANSI, "");
  const results = [];
  for (const m of plain.matchAll(/^(\S.*?) => (.*) \.\.\. (ok|FAILED|ignored)( \(due to [^)]*\))? \([^)]*\)$/gm)) {
    results.push({ file: m[1], name: m[2], status: m[3], group: m[4] !== undefined });
  }
  // Every describe that holds a finished test ("<file> => a ... b" holds "<file> => a ... b ... c").
  const groups = new Set();
  for (const r of results) {
    const parts = r.name.split(" ... ");
    for (let i = 1; i < parts.length; i++) groups.add(`${r.file} => ${parts.slice(0, i).join(" ... ")}`);
  }
  const leaves = results.filter((r) => !r.group && !groups.has(`${r.file} => ${r.name}`));
  const failed = leaves.filter((r) => r.status === "FAILED").map((r) => `${r.file} => ${r.name}`);
  return {
    passed: leaves.filter((r) => r.status === "ok").length,
    failed: failed.length,
    names: [...new Set(failed)],
    errors: denoErrors(plain),
    last: leaves.at(-1)?.name,
  };
}

/**
 * Counts the tests in `bun test` output: "(pass) <describe> > <test> [12.00ms]" or "(fail) …" per test, what a
 * failed test threw printed just before its line, and the "(fail)" lines again in the closing summary (the first
 * one counts).
 *
 * @example
 * ```js
 * parseBun("(pass) g > t [1.00ms]\n(fail) g > u [2.00ms]\n", "tests/a.test.ts").failed; // 1
 * ```
 * @param {string} out
 * @param {string} file the file the output is of, to name failures with
 * @returns {Counts}
 */
export function parseBun(out, file) {
  const plain = out.replace(ANSI, "");
  const names = [], errors = [], seen = new Set();
  let passed = 0, since = [], last;
  for (const line of plain.split("\n")) {
    if (line.startsWith("(fail) ") && !seen.has(line)) {
      seen.add(line);
      const name = line.slice(7).replace(/ \[[\d.]+m?s\]$/, "");
      names.push(`${file}: ${name}`);
      errors.push([`${file}: ${line.slice(7)}`, ...since.slice(-ERROR_LINES)].join("\n"));
      last = name;
      since = [];
    } else if (line.startsWith("(pass) ")) {
      passed++;
      last = line.slice(7).replace(/ \[[\d.]+m?s\]$/, "");
      since = [];
    } else if (/^\((skip|todo|fail)\) /.test(line)) since = [];
    else if (!/^\s+at (node:|\S+ \(node:)/.test(line)) since.push(line); // not the test runner's own frames
  }
  return { passed, failed: names.length, names, errors, last };
}
