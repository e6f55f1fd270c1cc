/**
 * Benchmark task: stream every event of a JSONL file with `readJsonl` (read,
 * split, decode and `JSON.parse` each line), touching each value so the
 * parse cannot be skipped. Prints the counts as JSON.
 *
 *     bun bench/tasks/stream-events.ts <events.jsonl>
 *
 * @module
 */
import process from "node:process";
import { readJsonl } from "../../src/store/jsonl.ts";

const path = process.argv[2];
if (!path) {
  process.stderr.write("usage: stream-events.ts <events.jsonl>\n");
  process.exit(2);
}
let events = 0, problems = 0, acts = 0;
for (const entry of readJsonl(path)) {
  if (entry.problem) problems++;
  else {
    events++;
    if (entry.value.phase === "act") acts++;
  }
}
process.stdout.write(JSON.stringify({ events, acts, problems }) + "\n");
process.exit(problems === 0 ? 0 : 1);
