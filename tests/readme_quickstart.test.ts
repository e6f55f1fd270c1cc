/**
 * The README's quick start works as printed and touches nothing of the
 * reader's (issue 38 §4): its block is taken from README.md and run by bash
 * in this checkout, `npx noema` as printed. And every shell example in the
 * README and docs/ calls noema one way, `npx noema` (the single binary's
 * section aside).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import process from "node:process";
import { REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const readme = readFileSync(join(REPO, "README.md"), "utf8");

/** The shell lines of a Markdown file's code blocks that call noema bare, with where they are. */
function bareCalls(file: string): string[] {
  const found: string[] = [];
  let fence: string | null = null, section = "";
  readFileSync(file, "utf8").split("\n").forEach((line, i) => {
    if (line.startsWith("## ")) section = line;
    const open = /^\s*```(\w*)/.exec(line);
    if (open) return void (fence = fence === null ? open[1] : null);
    if (fence === null || !["sh", "bash", "shell", "console", ""].includes(fence)) return;
    if (section.includes("Single binary")) return;
    if (/(^|[;&|(]\s*|\$ |`)noema( |$)/.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
  });
  return found;
}

describe("the README's first steps", () => {
  test("every shell example in README.md and docs/ calls noema as `npx noema`", () => {
    const docs = readdirSync(join(REPO, "docs")).filter((f) => f.endsWith(".md")).map((f) => join(REPO, "docs", f));
    const bare = [join(REPO, "README.md"), ...docs].flatMap(bareCalls);
    assert.deepEqual(bare, [], "these call noema bare");
  });

  test("the quick start runs as printed, on scratch directories only: the deploy waits, then runs once approved", {
    timeout: 300_000,
  }, () => {
    const block = /## Quick start\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(block, "README.md has a Quick start with a sh block");
    const tmp = tempDir("noema-quickstart-");
    try {
      const before = spawnSync("git", ["status", "--porcelain", "--ignored"], { cwd: REPO, encoding: "utf8" }).stdout;
      // TMPDIR keeps mktemp's scratch directories in this test's own; bash runs the block as a reader pastes it.
      const r = spawnSync("bash", ["-c", `${block}\necho "root=$NOEMA_ROOT"\necho "scratch=$scratch"`], {
        cwd: REPO,
        env: { ...process.env, TMPDIR: tmp.path, NOEMA_ROOT: "", NO_COLOR: "1" },
        encoding: "utf8",
        timeout: 240_000,
      });
      assert.equal(r.status, 0, r.stderr);
      const lines = r.stdout.split("\n");
      assert.ok(lines.includes("4"), `the deploy run paused for approval (exit 4):\n${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /waiting for approval/);
      assert.ok(lines.includes("public") && lines.includes("site"), "the approved deploy ran in the scratch repo");
      const root = /^root=(.*)$/m.exec(r.stdout)?.[1] ?? "";
      assert.ok(root.startsWith(tmp.path), `episodes went to a scratch root, not ${root}`);
      assert.equal(readdirSync(join(root, "episodes")).filter((d) => d.startsWith("ep_")).length, 2);
      const after = spawnSync("git", ["status", "--porcelain", "--ignored"], { cwd: REPO, encoding: "utf8" }).stdout;
      assert.equal(after, before, "the checkout is as it was");
    } finally {
      tmp.cleanup();
    }
  });
});
