/**
 * Benchmark task: `noema validate` on one `events.jsonl` (the same call the
 * CLI makes for a file). Prints the report's counts as JSON; exits 1 when the
 * file is not valid.
 *
 *     bun bench/tasks/validate-file.ts <events.jsonl>
 *
 * @module
 */
import process from "node:process";
import { validateFile } from "../../src/validate/validate.ts";

const path = process.argv[2];
if (!path) {
  process.stderr.write("usage: validate-file.ts <events.jsonl>\n");
  process.exit(2);
}
const report = validateFile(path, { schema: "event" });
process.stdout.write(
  JSON.stringify({ valid: report.valid, events: report.checked.events, problems: report.problem_count }) + "\n",
);
if (!report.valid) {
  for (const p of report.problems.slice(0, 5)) {
    process.stderr.write(`${p.file}:${p.line ?? ""}: ${p.rule}: ${p.message}\n`);
  }
}
process.exit(report.valid ? 0 : 1);
