/**
 * `npm run build`: compiles the CLI into one executable, `dist/noema`, with
 * `bun build --compile`.
 *
 * The binary embeds the Bun runtime, the CLI, the runtime, the validators
 * and the JSON Schemas (everything `bin/noema.ts` imports statically). Policy,
 * adapter, planner and assertion plugins are still loaded from `.ts` files at
 * run time; they import `"noema"`, which the binary serves as a virtual
 * module (see `registerPluginApi` in `src/plugins/loader.ts`).
 *
 * Flags, and why:
 *
 * - `--minify`, `--bytecode --format=esm`: smaller and faster to start
 *   (bytecode roughly halves the cold start; dynamic `import()` of plugin
 *   `.ts` files from disk still works with it, which `tests/binary.test.ts`
 *   checks). `--format=esm` because the entry uses top-level `await`.
 * - `--no-compile-autoload-dotenv`, `--no-compile-autoload-bunfig`,
 *   `--no-compile-autoload-tsconfig`, `--no-compile-autoload-package-json`:
 *   the binary must not read `.env`, `bunfig.toml` (whose `preload` would run
 *   code before noema), `tsconfig.json` or `package.json` from the working
 *   directory. Each flag is checked against `bun build --help` first, so a
 *   Bun upgrade that renames one fails the build instead of silently
 *   dropping the protection.
 * - Worker entry points ({@link WORKERS}) are compiled in as extra entry
 *   points. Bun places embedded files relative to the entry points' common
 *   directory, so the build compiles two one-line wrappers written side by
 *   side in a temp directory (`noema.ts` importing `bin/noema.ts`,
 *   `policy_worker.ts` importing `src/runtime/policy_worker.ts`): the worker
 *   then sits at `/$bunfs/root/policy_worker.js`, where the main bundle's
 *   `new URL("./policy_worker.ts", import.meta.url)` finds it.
 *
 *     bun scripts/build.ts [--outfile dist/noema] [--no-bytecode] [--target bun-linux-x64]
 *
 * @example
 * ```ts
 * import { build } from "./build.ts";
 * const { outfile, bytes } = build({ outfile: "/tmp/noema" });
 * ```
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** The repository root. */
export const REPO_ROOT: string = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The default output: `dist/noema`. */
export const DEFAULT_OUTFILE: string = join(REPO_ROOT, "dist", "noema");

/** The entry point compiled into the binary. */
export const ENTRY: string = join(REPO_ROOT, "bin", "noema.ts");

/**
 * Worker entry points compiled into the binary next to the main one (those
 * that exist). A module starts one with
 * `new Worker(new URL("./<name>.ts", import.meta.url))`; in the binary that URL
 * is `/$bunfs/root/<name>.ts`, so each worker is embedded at the root, beside
 * the main entry, under its own base name: two workers of one base name would
 * be one file there (the last written), so {@link build} refuses them.
 */
export const WORKERS: readonly string[] = [
  join(REPO_ROOT, "src", "runtime", "policy_worker.ts"),
  join(REPO_ROOT, "src", "shared_store", "store_live_worker.ts"),
  join(REPO_ROOT, "src", "export", "otel", "live_worker.ts"),
  join(REPO_ROOT, "src", "store", "log_digest_worker.ts"),
];

/** Flags that keep a hostile working directory from configuring the binary. */
export const HARDENING_FLAGS: readonly string[] = [
  "--no-compile-autoload-dotenv",
  "--no-compile-autoload-bunfig",
  "--no-compile-autoload-tsconfig",
  "--no-compile-autoload-package-json",
];

/** Options of {@link build}. */
export interface BuildOptions {
  /** Where to write the executable. @default {DEFAULT_OUTFILE} */
  outfile?: string;
  /** Compile to bytecode (faster start). @default {true} */
  bytecode?: boolean;
  /** Apply {@link HARDENING_FLAGS}; only tests turn this off, to show what they prevent. @default {true} */
  harden?: boolean;
  /** A cross-compilation target such as `bun-linux-arm64`. @default {the host} */
  target?: string;
  /** The `bun` executable. @default {the running Bun, else node_modules/.bin/bun, else "bun"} */
  bun?: string;
}

/** What {@link build} produced. */
export interface BuildResult {
  /** Absolute path of the executable. */
  outfile: string;
  /** Its size in bytes. */
  bytes: number;
  /** The full `bun build` command line. */
  command: string[];
  /** Wall time of the build, ms. */
  ms: number;
}

/**
 * The `bun` to build with: the running Bun when this script runs under Bun,
 * else the project's pinned one, else `bun` on PATH.
 *
 * @example
 * ```ts
 * import { bunExecutable } from "./build.ts";
 * console.log(bunExecutable());
 * ```
 */
export function bunExecutable(): string {
  if ((globalThis as { Bun?: unknown }).Bun !== undefined) return process.execPath;
  const local = join(REPO_ROOT, "node_modules", ".bin", "bun");
  return existsSync(local) ? local : "bun";
}

/**
 * The `bun build` arguments for the binary.
 *
 * @example
 * ```ts
 * import { buildArgs } from "./build.ts";
 * buildArgs({ outfile: "dist/noema" }).includes("--compile"); // true
 * // entries: the main entry first, then worker entries
 * ```
 */
export function buildArgs(options: BuildOptions = {}, entries: readonly string[] = [ENTRY]): string[] {
  const outfile = resolve(options.outfile ?? DEFAULT_OUTFILE);
  return [
    "build",
    "--compile",
    "--minify",
    ...(options.bytecode === false ? [] : ["--bytecode", "--format=esm"]),
    ...(options.harden === false ? [] : HARDENING_FLAGS),
    ...(options.target ? [`--target=${options.target}`] : []),
    "--outfile",
    outfile,
    ...entries,
  ];
}

/**
 * The hardening flags that this `bun build` does not know (empty when all exist).
 *
 * @example
 * ```ts
 * import { missingFlags } from "./build.ts";
 * if (missingFlags().length > 0) throw new Error("upgrade bun");
 * ```
 */
export function missingFlags(bun: string = bunExecutable()): string[] {
  const help = spawnSync(bun, ["build", "--help"], { encoding: "utf8" });
  if (help.error) throw new Error(`cannot run ${bun} build --help: ${help.error.message}`);
  const text = `${help.stdout}${help.stderr}`;
  return HARDENING_FLAGS.filter((f) => !text.includes(f));
}

/**
 * Compiles `dist/noema` (or `options.outfile`). Throws with Bun's output when
 * the build fails or a hardening flag is unknown to this Bun.
 *
 * @example
 * ```ts
 * import { build } from "./build.ts";
 * console.log(build().outfile);
 * ```
 */
export function build(options: BuildOptions = {}): BuildResult {
  const bun = options.bun ?? bunExecutable();
  if (options.harden !== false) {
    const missing = missingFlags(bun);
    if (missing.length > 0) {
      throw new Error(`this bun does not support ${missing.join(", ")}; refusing to build an unhardened binary`);
    }
  }
  const workers = WORKERS.filter((w) => existsSync(w));
  const clash = workers.filter((w, i) => workers.findIndex((o) => basename(o) === basename(w)) !== i);
  if (clash.length > 0) {
    throw new Error(
      `worker entry points must have distinct base names (each is embedded at /$bunfs/root/<name>): ${
        clash.join(", ")
      }`,
    );
  }
  const entryDir = mkdtempSync(join(tmpdir(), "noema-build-"));
  let r: ReturnType<typeof spawnSync>;
  let args: string[];
  let outfile: string;
  let ms: number;
  try {
    const entries = [join(entryDir, "noema.ts"), ...workers.map((w) => join(entryDir, basename(w)))];
    writeFileSync(entries[0], `import ${JSON.stringify(ENTRY)};\n`);
    workers.forEach((w, i) => writeFileSync(entries[i + 1], `import ${JSON.stringify(w)};\n`));
    args = buildArgs(options, workers.length > 0 ? entries : [ENTRY]);
    outfile = args[args.indexOf("--outfile") + 1];
    mkdirSync(dirname(outfile), { recursive: true });
    const t0 = performance.now();
    // The working directory is the build's own empty one: the build reads no config file of the directory it was
    // started in (there is none in the repository), and Bun's temporary copy of the executable (it is written in the
    // working directory, then moved to the outfile) never lands in the repository or beside the outfile.
    r = spawnSync(bun, args, { cwd: entryDir, encoding: "utf8", maxBuffer: 1 << 26 });
    ms = performance.now() - t0;
  } finally {
    rmSync(entryDir, { recursive: true, force: true });
  }
  if (r.error) throw new Error(`cannot run ${bun}: ${r.error.message}`);
  if (r.status !== 0 || !existsSync(outfile)) {
    throw new Error(`bun build failed (exit ${r.status}):\n${r.stdout}${r.stderr}`);
  }
  return { outfile, bytes: statSync(outfile).size, command: [bun, ...args], ms };
}

function flagValue(args: readonly string[], name: string): string | undefined {
  const i = args.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i === -1) return undefined;
  return args[i].includes("=") ? args[i].slice(args[i].indexOf("=") + 1) : args[i + 1];
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  try {
    const result = build({
      outfile: flagValue(args, "--outfile"),
      bytecode: !args.includes("--no-bytecode"),
      target: flagValue(args, "--target"),
    });
    const mb = (result.bytes / 2 ** 20).toFixed(1);
    process.stdout.write(`built ${result.outfile} (${mb} MiB) in ${(result.ms / 1000).toFixed(1)} s\n`);
  } catch (e) {
    process.stderr.write(`build: ${(e as Error).message}\n`);
    process.exit(1);
  }
}
