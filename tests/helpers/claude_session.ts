/**
 * Sessions of the real Claude Code (node_modules/.bin/claude) governed by
 * noema, offline: each test gets a fresh HOME, workspace and root, and a
 * scripted Anthropic Messages server on 127.0.0.1 that plays the model.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { validate } from "../../src/validate/validate.ts";
import { startAnthropicServer, type Turn } from "./anthropic_server.ts";
import { cliCommand, REPO } from "./cli.ts";
import { runChild } from "./child.ts";

/** The Claude Code binary the tests drive. */
export const CLAUDE: string = join(REPO, "node_modules", ".bin", "claude");

/** Runs the noema CLI asynchronously (the scripted model server lives in this process). */
export function noemaCli(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  options: { input?: string; onSpawn?: (pid: number) => void } = {},
): ReturnType<typeof runChild> {
  const [cmd, ...argv] = [...cliCommand(), ...args];
  return runChild(cmd, argv, {
    cwd,
    input: options.input,
    env: { ...process.env, NO_COLOR: "1", NOEMA_ROOT: "", ...env },
    timeoutMs: 120_000,
    onSpawn: options.onSpawn,
  });
}

/**
 * A maker of sessions under `base`: each call starts a scripted model (the
 * script may name paths in the session's workspace) and returns `run`
 * (`noema run TASK --using claude-code` in the sandbox, plus `extra`) and
 * `cmd` (any noema command on the session's root).
 *
 * @example
 * ```ts
 * import { claudeSessions } from "./claude_session.ts";
 * const session = claudeSessions("/tmp/t");
 * // const s = await session([{ text: "Done." }]); await s.run("say hi", ["--json"]); await s.server.close();
 * ```
 */
export function claudeSessions(base: string) {
  let n = 0;
  return async (script: Turn[] | ((workspace: string) => Turn[])) => {
    const dir = join(base, `t${++n}`);
    const box = { home: join(dir, "home"), workspace: join(dir, "ws"), root: join(dir, "root") };
    for (const d of Object.values(box)) mkdirSync(d, { recursive: true });
    const server = await startAnthropicServer(typeof script === "function" ? script(box.workspace) : script);
    const env = {
      HOME: box.home,
      ANTHROPIC_BASE_URL: server.url,
      ANTHROPIC_API_KEY: "test",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      NOEMA_CLAUDE_BIN: CLAUDE,
    };
    const run = (task: string, extra: string[] = [], onSpawn?: (pid: number) => void) =>
      noemaCli(
        ["run", task, "--using", "claude-code", "--workspace", box.workspace, "--root", box.root, ...extra],
        env,
        box.workspace,
        { onSpawn },
      );
    const cmd = (args: string[]) => noemaCli([...args, "--root", box.root], env, box.workspace);
    return { server, box, env, run, cmd };
  };
}

/** A session made by {@link claudeSessions}. */
export type ClaudeSession = Awaited<ReturnType<ReturnType<typeof claudeSessions>>>;

/** A scripted Bash tool call. */
export const bash = (id: string, command: string) => ({ id, name: "Bash", input: { command, description: command } });

/** The episode validates, and `noema verify` passes. */
export async function assertSound(s: ClaudeSession, dir: string): Promise<void> {
  assert.deepEqual(validate(dir).problems, [], `${dir} must validate`);
  const verify = await s.cmd(["verify", dir]);
  assert.equal(verify.code, 0, `noema verify: ${verify.stdout}${verify.stderr}`);
}
