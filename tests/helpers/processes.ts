/**
 * Finding processes by their environment; stopping the resident hook
 * servers a test started, and waiting for them:
 * removing their directory stops them, but each one still writes the state of
 * its episodes as it stops, so a test that removes its temporary directory
 * right after would race it (`rm -rf` failing with ENOTEMPTY).
 *
 * @module
 */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";

/**
 * The pids of this machine's processes with an environment entry `match`
 * accepts (Linux: read from /proc/<pid>/environ; those not ours to read are
 * left out).
 *
 * @example
 * ```ts
 * pidsWithEnv((entry) => entry === "NOEMA_TEST_MARK=42");
 * ```
 */
export function pidsWithEnv(match: (entry: string) => boolean): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(join("/proc", name, "environ"), "utf8").split("\0").some(match)) pids.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

/** The pids of the hook servers serving a socket under `servers`. */
function hookServerPids(servers: string): number[] {
  const prefix = `NOEMA_HOOK_SERVE=${resolve(servers)}`;
  return pidsWithEnv((entry) => entry.startsWith(prefix));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Removes `servers` (which stops the servers under it) and waits until their
 * processes have exited, `waitMs` at most.
 *
 * @example
 * ```ts
 * await stopHookServers(servers); // then the test's directory can be removed
 * ```
 */
export async function stopHookServers(servers: string, waitMs = 15_000): Promise<void> {
  const pids = hookServerPids(servers);
  rmSync(servers, { recursive: true, force: true });
  const until = Date.now() + waitMs;
  while (pids.some(alive) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
}
