/**
 * What the shared-store tests compare and wait for: an episode directory's
 * files byte for byte, a condition met within a bound that only catches
 * hangs, and the gated deploy task the approval tests run.
 *
 * @module
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { REPO } from "./cli.ts";

/**
 * Every file of a directory tree, relative path → bytes (the `lock` file and its claim files, `lock.*`, left out:
 * they are a writer's, not the episode's, and never published).
 *
 * @example
 * ```ts
 * import { tree } from "./helpers/episode_trees.ts";
 * assert.deepEqual(tree(pulledDir), tree(localDir));
 * ```
 */
export function tree(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name !== "lock" && !e.name.startsWith("lock.")) out.set(relative(dir, p), readFileSync(p));
    }
  };
  walk(dir);
  return out;
}

/**
 * Waits (at most `ms`, a bound that only catches hangs) until `done` holds, looking every 50 ms; whether it did.
 *
 * @example
 * ```ts
 * import { until } from "./helpers/episode_trees.ts";
 * assert.ok(await until(() => !existsSync(marker)), "published");
 * ```
 */
export async function until(done: () => boolean | Promise<boolean>, ms = 60_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/**
 * A shell task whose second step deploys, held by the approval gate; each deploy appends `deployed` to `ran`, so a
 * test can count how often the approved call ran. Returns the task file's path (`<dir>/deploy.json`).
 *
 * @example
 * ```ts
 * import { deployTask } from "./helpers/episode_trees.ts";
 * cli(["run", deployTask(root, join(root, "ran"))]); // exit 4: paused for approval
 * ```
 */
export function deployTask(dir: string, ran: string): string {
  const path = join(dir, "deploy.json");
  writeFileSync(
    path,
    JSON.stringify({
      task: "build and deploy",
      using: "shell",
      policies: [join(REPO, "plugins/policies/approval-gate.ts")],
      steps: [
        { kind: "act", description: "build", inputs: { command: "echo built" } },
        { kind: "act", description: "deploy", inputs: { command: `echo deployed >> '${ran}'; echo deploy done` } },
      ],
    }),
  );
  return path;
}

/**
 * Writes a scripted task of `steps` act steps (each answered ok at once by its script, `<dir>/script.json`: a fast,
 * CPU-bound run that writes a lot) as `<dir>/task.json`; returns its path.
 *
 * @example
 * ```ts
 * import { scriptedTask } from "./helpers/episode_trees.ts";
 * cli(["run", scriptedTask(root, 20)]);
 * ```
 */
export function scriptedTask(dir: string, steps: number, task = `scripted ${steps}`): string {
  const script = join(dir, "script.json");
  writeFileSync(script, JSON.stringify({ results: [], default: { status: "ok", outcome: "ok", output: { rows: 1 } } }));
  const path = join(dir, "task.json");
  writeFileSync(
    path,
    JSON.stringify({
      task,
      using: "scripted",
      adapter: { script },
      learn_mode: "off",
      steps: Array.from({ length: steps }, (_, i) => ({ kind: "act", description: `step ${i}`, inputs: { n: i } })),
    }),
  );
  return path;
}
