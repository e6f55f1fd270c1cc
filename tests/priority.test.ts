/**
 * Background work at a low priority (`src/priority.ts`): the command line of
 * {@link idleCommand} runs its program in Linux's idle scheduling class, with
 * its arguments intact, and keeps the pid the spawn reports.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import process from "node:process";
import { idleCommand, unidleProcess } from "../src/priority.ts";
import { runtimeCommand } from "./helpers/cli.ts";

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

describe("idleThisProcess", { skip: !chrt && "no util-linux chrt here" }, () => {
  test("moves every thread of the process to the idle class and its autogroup to nice 19; unidle takes them back (autogroup at 0)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "noema-prio-"));
    try {
      const script = join(dir, "idle.ts");
      const priority = pathToFileURL(join(import.meta.dirname ?? ".", "..", "src", "priority.ts")).href;
      // Field 41 of a thread's stat is its scheduling policy: 0 normal, 5 idle.
      writeFileSync(
        script,
        `import { readdirSync, readFileSync } from "node:fs";
import { idleThisProcess, unidleThisProcess } from ${JSON.stringify(priority)};
const look = () => {
  // A thread may end between the listing and the read (Deno's come and go): it has no policy left to look at.
  const policies = readdirSync("/proc/self/task").flatMap((t) => {
    try {
      return [readFileSync(\`/proc/self/task/\${t}/stat\`, "utf8").split(") ")[1].split(" ")[38]];
    } catch {
      return [];
    }
  });
  let group = "none";
  try { group = readFileSync("/proc/self/autogroup", "utf8").trim().split(" ").pop(); } catch { /* no autogroups */ }
  return \`\${[...new Set(policies)].join(",")} \${group}\`;
};
const before = look();
idleThisProcess();
const idle = look();
unidleThisProcess();
console.log(JSON.stringify({ before, idle, after: look() }));
`,
      );
      const argv = [...runtimeCommand(), script];
      const r = await run(argv);
      assert.equal(r.code, 0);
      const { before, idle, after } = JSON.parse(r.out);
      assert.match(before, /^0 /, "normal class before");
      assert.match(idle, /^5 /, `every thread idle: ${idle}`);
      assert.match(after, /^0 /, "normal class again");
      if (!before.endsWith("none")) {
        assert.ok(idle.endsWith(" 19"), `autogroup at nice 19: ${idle}`);
        // Raising it back is allowed to root only (elsewhere it stays at 19).
        if (process.getuid?.() === 0) assert.ok(after.endsWith(" 0"), `autogroup back at nice 0: ${after}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("unidleProcess", { skip: !chrt && "no util-linux chrt here" }, () => {
  test("takes another process (a run's publisher, from the run) out of the idle class, its autogroup back at 0", async () => {
    // In the idle class and a session of its own, its autogroup lowered, as a publishing process puts itself.
    const [cmd, ...args] = idleCommand(["sleep", "60"]);
    const child = spawn(cmd, args, {
      detached: true,
      stdio: "ignore",
    });
    try {
      const pid = child.pid!;
      const policy = () => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[38];
      const group = () => {
        try {
          return readFileSync(`/proc/${pid}/autogroup`, "utf8").trim().split(" ").pop();
        } catch {
          return "none";
        }
      };
      const end = Date.now() + 30_000; // the shell execs chrt, which execs sleep: once it is idle
      while (policy() !== "5" && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      assert.equal(policy(), "5", "idle before");
      try {
        writeFileSync(`/proc/${pid}/autogroup`, "19");
      } catch { /* no autogroups */ }
      unidleProcess(pid);
      assert.equal(policy(), "0", "normal class after");
      if (group() !== "none" && process.getuid?.() === 0) assert.equal(group(), "0", "autogroup back at nice 0");
    } finally {
      child.kill("SIGKILL");
    }
  });
});
