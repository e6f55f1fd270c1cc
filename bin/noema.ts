#!/usr/bin/env bun
/**
 * The `noema` executable (package.json `bin`). Runs the CLI under Bun, or
 * under Deno with `deno run -A bin/noema.ts`.
 *
 * @module
 */
import process from "node:process";

/** Whether the command line runs `noema hook`, the global options (`--root DIR`, `--debug`) allowed before it. */
function runsHook(args: readonly string[]): boolean {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "hook") return true;
    if (args[i] === "--root") i++;
    else if (!args[i].startsWith("--root=") && args[i] !== "--debug") return false;
  }
  return false;
}

// A hook call first tries the session's resident hook server, before the CLI is loaded (the fast path), however it
// is launched: `bun bin/noema.ts`, the package's launcher (`npx noema`, bin/noema.mjs), with global options first.
if (runsHook(process.argv.slice(2)) && process.env.NOEMA_HOOK_SERVE === undefined) {
  const { hookViaServer } = await import("../src/agents/server/client.ts");
  const code = await hookViaServer(process.argv.slice(2));
  if (code !== null) process.exit(code);
}
// A run's live OpenTelemetry export and live publishing (internal): their processes load only what they need.
if (process.argv[2]?.startsWith("__")) {
  const { runBackgroundCommand } = await import("../src/cli/background_commands.ts");
  const code = await runBackgroundCommand(process.argv[2]);
  if (code !== null) process.exit(code);
}
const { main } = await import("../src/cli/main.ts");
const code = await main();
// noema's own exit (a plugin's process.exit is refused: src/plugins/exit_guard.ts).
const { exitProcess } = await import("../src/plugins/exit_guard.ts");
exitProcess(code);
