/**
 * Benchmark task (the baseline of `report.ts`): write the events of an
 * episode as plain text, one line per event (`timestamp phase summary`),
 * streaming `events.jsonl` with `readJsonl`. The least any report of the
 * same events costs.
 *
 *     bun bench/tasks/events-text.ts <events.jsonl> <out.txt>
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import process from "node:process";
import { eventSummary } from "../../src/cli/format.ts";
import { readJsonl } from "../../src/store/jsonl.ts";

const [path, out] = process.argv.slice(2);
if (!path || !out) {
  process.stderr.write("usage: events-text.ts <events.jsonl> <out.txt>\n");
  process.exit(2);
}
const lines: string[] = [];
for (const entry of readJsonl(path)) {
  if (entry.problem) continue;
  const e = entry.value;
  lines.push(`${String(e.timestamp)} ${String(e.phase)} ${eventSummary(e, 80)}`);
}
writeFileSync(out, lines.join("\n") + "\n");
