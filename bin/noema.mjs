#!/usr/bin/env node
/**
 * The `noema` executable of the npm package (package.json `bin`): a small
 * Node launcher, so `npx noema` and noema installed as a dependency work with
 * only Node on PATH. It finds the Bun runtime that comes with the package
 * (the `bun` npm package, or its platform package `@oven/bun-<os>-<arch>`),
 * or `$NOEMA_BUN`, and runs the CLI (`bin/noema.ts`) with it, passing the
 * arguments, stdin/stdout/stderr, signals and the exit code through.
 *
 * Bun runs with `--no-env-file`, `--no-install` and this package's own
 * (empty) bunfig, so a `.env` or `bunfig.toml` in the working directory is
 * never read and an import never downloads a package.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = dirname(here);
const require = createRequire(import.meta.url);

/** The directory of an installed package, or null. */
function packageDir(name) {
  try {
    return dirname(require.resolve(`${name}/package.json`));
  } catch {
    return null;
  }
}

/** The Bun executable to use, or null. */
function findBun() {
  if (process.env.NOEMA_BUN) return existsSync(process.env.NOEMA_BUN) ? process.env.NOEMA_BUN : null;
  const exe = process.platform === "win32" ? "bun.exe" : "bun";
  const candidates = [];
  const bunPkg = packageDir("bun");
  if (bunPkg) candidates.push(join(bunPkg, "bin", "bun.exe"), join(bunPkg, "bin", exe));
  const os = process.platform === "win32" ? "windows" : process.platform;
  const arch = process.arch === "arm64" ? "aarch64" : process.arch;
  for (const suffix of ["", "-musl", "-baseline", "-musl-baseline"]) {
    const dir = packageDir(`@oven/bun-${os}-${arch}${suffix}`);
    if (dir) candidates.push(join(dir, "bin", exe));
  }
  return candidates.find((p) => existsSync(p)) ?? null;
}

const bun = findBun();
if (bun === null) {
  process.stderr.write(
    "noema: cannot find the Bun runtime noema runs on (the 'bun' npm package, installed with noema).\n" +
      "noema: reinstall noema (npm install), set NOEMA_BUN=/path/to/bun, or use the single binary (npm run build).\n",
  );
  process.exit(1);
}

// bin/noema.ts: the CLI, with the fast path of `noema hook` (its resident server) in front.
const main = join(pkgDir, "bin", "noema.ts");
const child = spawn(
  bun,
  ["--no-env-file", "--no-install", `--config=${join(here, "bunfig.toml")}`, main, ...process.argv.slice(2)],
  // Under npx (npm_command=exec) the commands noema prints for the user to type next say `npx noema`.
  {
    stdio: "inherit",
    env: process.env.npm_command === "exec" ? { ...process.env, NOEMA_CALLED_AS: "npx" } : process.env,
  },
);
// Ctrl-C reaches the whole process group: the CLI handles it (exit 130); the launcher waits for it.
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => {
    if (sig !== "SIGINT") child.kill(sig);
  });
}
child.on("error", (e) => {
  process.stderr.write(`noema: cannot start ${bun}: ${e.message}\n`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    const n = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1, SIGKILL: 9 }[signal] ?? 1;
    process.exit(128 + n);
  }
  process.exit(code ?? 1);
});
