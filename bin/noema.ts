#!/usr/bin/env bun
/**
 * The `noema` executable (package.json `bin`). Runs the CLI under Bun, or
 * under Deno with `deno run -A bin/noema.ts`.
 *
 * @module
 */
import process from "node:process";

// A hook call first tries the session's resident hook server, before the CLI is loaded (the fast path).
if (process.argv[2] === "hook" && process.env.NOEMA_HOOK_SERVE === undefined) {
  const { hookViaServer } = await import("../src/agents/server/client.ts");
  const code = await hookViaServer(process.argv.slice(2));
  if (code !== null) process.exit(code);
}
const { main } = await import("../src/cli/main.ts");
const code = await main();
// noema's own exit (a plugin's process.exit is refused: src/plugins/exit_guard.ts).
const { exitProcess } = await import("../src/plugins/exit_guard.ts");
exitProcess(code);
