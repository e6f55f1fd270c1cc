/**
 * `npm run build:node` (also the `prepare` script, so `npm ci` and `npm pack`
 * run it): compiles the library (`mod.ts`) to JavaScript for Node in
 * `dist/node/`, so `import … from "noema"` works under plain Node (20 and
 * later), which cannot import `.ts` files. package.json `exports` sends Node
 * to `dist/node/mod.js`; Bun, Deno and TypeScript (`types`) keep `mod.ts`.
 *
 * Flags, and why:
 *
 * - `--target node --format esm`: Node's module system, ES modules (the
 *   package is `"type": "module"`).
 * - `--packages external`: dependencies stay imports of the installed
 *   packages (valibot, commander, the AI SDK…), not copies.
 * - `--splitting`: the lazily loaded parts (the `llm` adapter and the AI SDK,
 *   the agent drivers) stay separate chunks, loaded on first use as in Bun.
 *
 * The folder is emptied first, so chunks of an older build never linger.
 *
 *     bun scripts/build-node.ts [--outdir dist/node]
 *
 * @example
 * ```ts
 * import { buildNode } from "./build-node.ts";
 * buildNode(); // "…/dist/node/mod.js"
 * ```
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** The repository root. */
const REPO_ROOT: string = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The default output folder: `dist/node`. */
export const NODE_OUTDIR: string = join(REPO_ROOT, "dist", "node");

/**
 * Compiles `mod.ts` for Node into `outdir` (emptied first) with the Bun
 * running this script; returns the path of the entry, `<outdir>/mod.js`.
 * Throws with Bun's output when the build fails.
 *
 * @example
 * ```ts
 * import { buildNode } from "./build-node.ts";
 * buildNode("/tmp/noema-node"); // "/tmp/noema-node/mod.js"
 * ```
 */
export function buildNode(outdir: string = NODE_OUTDIR): string {
  rmSync(outdir, { recursive: true, force: true });
  const args = [
    "build",
    join(REPO_ROOT, "mod.ts"),
    "--target",
    "node",
    "--format",
    "esm",
    "--packages",
    "external",
    "--splitting",
    "--outdir",
    outdir,
  ];
  const r = spawnSync(process.execPath, args, { cwd: REPO_ROOT, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`bun ${args.join(" ")} failed:\n${r.stdout}${r.stderr}`);
  return join(outdir, "mod.js");
}

if (import.meta.main) {
  const at = process.argv.indexOf("--outdir");
  const outdir = at > 0 && process.argv[at + 1] ? resolve(process.argv[at + 1]) : NODE_OUTDIR;
  // On stderr: `npm pack --json` runs this (prepare) and its stdout must stay JSON.
  console.error(`built ${buildNode(outdir)} (the library for Node)`);
}
