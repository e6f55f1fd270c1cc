/**
 * `npm run demo`: runs an example episode (a read-only shell survey of this
 * repository, watched by the path-risk policy), validates it, then shows its
 * dashboard with `noema view`.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(repo, "src", "cli", "main.ts");

function noema(args: string[], capture = false): string {
  process.stderr.write(`\n$ noema ${args.join(" ")}\n`);
  const r = spawnSync(process.execPath, [cli, ...args], {
    cwd: repo,
    stdio: capture ? ["ignore", "pipe", "inherit"] : "inherit",
    encoding: "utf8",
  });
  if (r.error) throw r.error;
  if (r.status !== 0 && r.status !== 3) {
    process.stderr.write(`noema exited with ${r.status}\n`);
    process.exit(r.status ?? 1);
  }
  return capture ? r.stdout.trim() : "";
}

const id = noema(["run", "examples/safe-shell.jsonc", "--quiet"], true);
process.stdout.write(`${id}\n`);
noema(["validate", id]);
noema(["view", id]);
