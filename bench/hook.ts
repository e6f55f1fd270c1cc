/**
 * Hook latency: what one `noema hook claude-code` call adds to an agent's
 * tool call. Builds `dist/noema`, records an episode that already holds
 * 1,000 tool calls (proposed and recorded through the episode core, with 2
 * policies), then measures, as child processes fed one payload on stdin:
 *
 * - `dist/noema hook claude-code` on `PreToolUse` (spawn, hand the call to
 *   the session's resident hook server, which consults both policies and
 *   appends the decision; a new call id each run). The first call of the
 *   session finds no server, answers in its own process and starts one; it
 *   is run once before measuring, as an agent's first call would be,
 * - the same on `PostToolUse` (record the result),
 * - the same `PreToolUse` with `NOEMA_HOOK_SERVER=0`: each call loads the
 *   episode and the policies itself (informational: what the server saves),
 * - the same through the npm package's launcher (`npx noema`: `node
 *   bin/noema.mjs`, which runs Bun), with `--root` before `hook`: it must
 *   reach the same fast path (its own resident server),
 * - the baseline: `true` as the hook, on the same stdin.
 *
 * Goal: the `PreToolUse` hook adds ≤ 30 ms (median) over `true`.
 *
 *     bun bench/hook.ts [--runs 30] [--calls 1000] [--no-build]
 *
 * @module
 */
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { build, DEFAULT_OUTFILE } from "../scripts/build.ts";
import { openEpisode } from "../src/agents/episodes.ts";
import {
  type BenchReport,
  type BenchTable,
  fixed,
  flag,
  type Measure,
  measure,
  runStandalone,
  tempDir,
} from "./lib.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));

/** Default runs per measured command. */
export const DEFAULT_RUNS = 30;
/** Default tool calls already in the episode. */
export const DEFAULT_CALLS = 1000;
/** The goal: milliseconds added by one PreToolUse hook call (median). */
export const GOAL_MS = 30;

const POLICIES = {
  "no-push.ts": `export default { name: "NoPush", version: "1.0", api: "1.0",
    advise(s) { return /git push/.test(String(s.action.input.command ?? "")) ? { kind: "veto", advice: "no pushes", confidence: 0.9 } : undefined; } };`,
  "hint-tests.ts": `export default { name: "HintTests", version: "1.0", api: "1.0",
    advise(s) { return /npm test/.test(String(s.action.input.command ?? "")) ? { kind: "hint", advice: "run one file", confidence: 0.9 } : undefined; } };`,
};

function payload(event: "PreToolUse" | "PostToolUse", id: string, cwd: string): string {
  const base = {
    session_id: "bench-session",
    transcript_path: join(cwd, "t.jsonl"),
    cwd,
    permission_mode: "default",
    hook_event_name: event,
    tool_name: "Bash",
    tool_input: { command: `echo call ${id}`, description: "bench" },
    tool_use_id: id,
  };
  return JSON.stringify(
    event === "PreToolUse" ? base : { ...base, tool_response: { stdout: `call ${id}`, stderr: "" }, duration_ms: 3 },
  );
}

async function median(
  cmd: (i: number) => string,
  runs: number,
  cwd: string,
  env: Record<string, string> = {},
): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const m = await measure(["sh", "-c", cmd(i)], { cwd, env });
    if (m.exitCode !== 0) throw new Error(`${cmd(i)} exited ${m.exitCode}: ${m.stderr.slice(-1000)}`);
    times.push(m.seconds * 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

/**
 * Runs the benchmark; `ok` is false when the hook adds more than the goal.
 *
 * @example
 * ```ts
 * import { main } from "./hook.ts";
 * const report = await main(["--runs", "10", "--calls", "200"]);
 * ```
 */
export async function main(args: string[] = []): Promise<BenchReport> {
  const runs = Number(flag(args, "runs") ?? process.env.BENCH_RUNS ?? DEFAULT_RUNS);
  const calls = Number(flag(args, "calls") ?? DEFAULT_CALLS);
  const binary = args.includes("--no-build") && existsSync(DEFAULT_OUTFILE) ? DEFAULT_OUTFILE : build().outfile;
  const tmp = tempDir("noema-bench-hook-");
  try {
    const root = join(tmp.path, ".noema");
    const policies = Object.entries(POLICIES).map(([name, text]) => {
      writeFileSync(join(tmp.path, name), text);
      return join(tmp.path, name);
    });
    const episode = await openEpisode("a long agent session", {
      root,
      using: "claude-code",
      policies,
      workspace: tmp.path,
    });
    for (let i = 0; i < calls; i++) {
      await episode.propose({
        kind: "tool",
        tool: "Bash",
        input: { command: `echo ${i}` },
        call_id: `toolu_seed_${i}`,
      });
      await episode.record(`toolu_seed_${i}`, { status: "ok", outcome: String(i), output: { stdout: String(i) } });
    }
    const id = episode.episodeId;
    episode.close();
    const hook = `${binary} hook claude-code --root ${root} --episode ${id} --print --grant --no-finish`;
    const file = (i: number, event: "PreToolUse" | "PostToolUse") => {
      const path = join(tmp.path, `${event}-${i}.json`);
      writeFileSync(path, payload(event, `toolu_bench_${i}`, tmp.path));
      return path;
    };
    const servers = join(tmp.path, "servers");
    const env = { NOEMA_HOOK_SERVER_DIR: servers };
    await median(() => `exec ${hook} < ${file(-1, "PreToolUse")}`, 1, tmp.path, env); // starts the server
    await new Promise((r) => setTimeout(r, 1000)); // let it load the episode and the policies
    const pre = await median((i) => `exec ${hook} < ${file(i, "PreToolUse")}`, runs, tmp.path, env);
    const post = await median((i) => `exec ${hook} < ${file(i, "PostToolUse")}`, runs, tmp.path, env);
    const direct = await median((i) => `exec ${hook} < ${file(runs + i, "PreToolUse")}`, Math.min(runs, 10), tmp.path, {
      NOEMA_HOOK_SERVER: "0",
    });
    // Through the npm package's launcher (`npx noema`: node bin/noema.mjs, then Bun), a global option first: the
    // same fast path (it has a server of its own: another executable).
    const launcher = `node ${join(REPO, "bin", "noema.mjs")} --root ${root} hook claude-code --episode ${id} ` +
      "--print --grant --no-finish";
    await median(() => `exec ${launcher} < ${file(-2, "PreToolUse")}`, 1, tmp.path, env); // starts its server
    await new Promise((r) => setTimeout(r, 1000));
    const viaNpmPre = await median(
      (i) => `exec ${launcher} < ${file(2 * runs + i, "PreToolUse")}`,
      runs,
      tmp.path,
      env,
    );
    const viaNpmPost = await median(
      (i) => `exec ${launcher} < ${file(2 * runs + i, "PostToolUse")}`,
      runs,
      tmp.path,
      env,
    );
    rmSync(servers, { recursive: true, force: true }); // stops the servers
    const node = await median((i) => `exec node -e 0 < ${file(i, "PreToolUse")}`, runs, tmp.path);
    const base = await median((i) => `exec true < ${file(i, "PreToolUse")}`, runs, tmp.path);
    const added = pre - base;
    const ok = added <= GOAL_MS;
    const table: BenchTable = {
      title: `Hook latency: one call on an episode holding ${calls} calls, 2 policies (median of ${runs})`,
      columns: ["hook", "median ms", "added over true, ms"],
      rows: [
        ["dist/noema hook claude-code (PreToolUse: decide)", fixed(pre, 1), fixed(added, 1)],
        ["dist/noema hook claude-code (PostToolUse: record)", fixed(post, 1), fixed(post - base, 1)],
        [
          "same PreToolUse, no resident server (NOEMA_HOOK_SERVER=0)",
          fixed(direct, 1),
          fixed(direct - base, 1),
        ],
        [
          "node bin/noema.mjs --root … hook claude-code (npx noema; PreToolUse)",
          fixed(viaNpmPre, 1),
          fixed(viaNpmPre - base, 1),
        ],
        ["node bin/noema.mjs … (PostToolUse)", fixed(viaNpmPost, 1), fixed(viaNpmPost - base, 1)],
        ["node -e 0 (the launcher's own start, for comparison)", fixed(node, 1), fixed(node - base, 1)],
        ["true (baseline)", fixed(base, 1), "0.0"],
      ],
      notes: [
        `goal (PreToolUse adds ≤ ${GOAL_MS} ms, policies in workers as by default): ${ok ? "met" : "MISSED"}`,
        "the NOEMA_HOOK_SERVER=0 row is informational: each call loads the episode (O(calls)) and starts the policies",
      ],
    };
    const measures: Measure[] = [{
      measure: `hook call, ${calls} calls, 2 policies: added ms (median)`,
      value: fixed(added, 1),
      baseline: `true ${fixed(base, 1)}`,
      ratio: `${fixed(pre / base)}×`,
      goal: `≤ ${GOAL_MS} ms added`,
      met: ok ? "yes" : "NO",
    }];
    return { name: "hook", tables: [table], ok, measures };
  } finally {
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
