/**
 * Background work at a low priority (`src/priority.ts`): the command line of
 * {@link idleCommand} runs its program in Linux's idle scheduling class, with
 * its arguments intact, and keeps the pid the spawn reports.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import process from "node:process";
import { idleCommand } from "../src/priority.ts";

const chrt = ["/usr/bin/chrt", "/bin/chrt"].some((p) => existsSync(p)) && process.platform === "linux";

/** Runs `argv`; resolves with its stdout and the pid the spawn reported. */
function run(argv: string[]): Promise<{ out: string; pid: number | undefined; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ out, pid: child.pid, code }));
  });
}

describe("idleCommand", { skip: !chrt && "no util-linux chrt here" }, () => {
  test("runs the program in the idle class, its arguments intact, under the pid the spawn reports", async () => {
    const script = `chrt -p $$; echo "pid $$"; printf '%s|' "$@"`;
    const r = await run(idleCommand(["sh", "-c", script, "sh", "a b", "it's", '"q"', "$HOME"]));
    assert.equal(r.code, 0);
    assert.match(r.out, /scheduling policy: SCHED_IDLE/);
    assert.match(r.out, new RegExp(`pid ${r.pid}\\n`), "the program has the spawned pid (exec'd, not a child)");
    assert.ok(r.out.endsWith(`a b|it's|"q"|$HOME|`), r.out);
  });
});
