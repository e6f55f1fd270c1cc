/**
 * The cost of Ed25519 signing and attesting a finished 10,000-step episode
 * (issue 36: "signing and attesting adds ≤ 5 ms beyond hashing its files"),
 * against hashing its files alone, measured in the same run, in turns.
 *
 * Rows:
 * - baseline: `sha256File` of every artifact file of the episode (what
 *   sealing and `noema verify` do anyway);
 * - sign the manifest: read the key file (`readPrivateKeyFile`), the
 *   canonical JSON of the manifest, the Ed25519 signature (`signManifest`);
 * - attest: `attestEpisode` (it verifies the episode — hashing every file —
 *   reads the summary and approvals, builds the statement, signs the PAE);
 * - sign + attest, minus the baseline: the time added (goal ≤ 5 ms).
 *
 *     bun bench/signing.ts [--steps 10000] [--rounds 15]
 *
 * @module
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import {
  attestEpisode,
  generateKeyFiles,
  listArtifactFiles,
  readPrivateKeyFile,
  run,
  sha256File,
  signManifest,
} from "../mod.ts";
import { type BenchReport, fixed, flag, runStandalone, tempDir } from "./lib.ts";

/** Best of `rounds` timings of each function, in milliseconds, taken in turns so all meet the same load. */
function bestOf(rounds: number, ...fns: (() => void)[]): number[] {
  const best = fns.map(() => Infinity);
  for (let i = 0; i < rounds; i++) {
    fns.forEach((fn, j) => {
      const t = performance.now();
      fn();
      best[j] = Math.min(best[j], performance.now() - t);
    });
  }
  return best;
}

/** Runs the benchmark and returns its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const steps = Number(flag(args, "steps") ?? 10_000);
  const rounds = Number(flag(args, "rounds") ?? 15);
  const tmp = tempDir("noema-bench-signing-");
  process.env.NOEMA_MAX_PLAN_STEPS = String(Math.max(steps, 5000)); // the plan limit, raised for this run only
  try {
    const keyFile = join(tmp.path, "bench.key");
    generateKeyFiles(keyFile);
    const script = join(tmp.path, "script.json");
    writeFileSync(
      script,
      JSON.stringify({ results: [], default: { status: "ok", outcome: "ok", output: { rows: 1 } } }),
    );
    const r = await run(`bench signing ${steps}`, {
      root: join(tmp.path, "root"),
      using: "scripted",
      adapter: { script },
      learn_mode: "off",
      policies: [{ name: "Bench", version: "1.0", advise: () => ({ kind: "hint" as const, advice: "checkpoint" }) }],
      steps: Array.from(
        { length: steps },
        (_, i) => ({ kind: "act" as const, description: `step ${i}`, inputs: { n: i, sql: `SELECT ${i}` } }),
      ),
    });
    const dir = dirname(r.paths.manifest);
    const files = listArtifactFiles(dir);
    const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
    let bytes = 0;
    const [hash, sign, attest] = bestOf(
      rounds,
      () => {
        bytes = 0;
        for (const f of files) bytes += sha256File(join(dir, f)).size_bytes;
      },
      () => signManifest(manifest, readPrivateKeyFile(keyFile)),
      () => attestEpisode(dir, readPrivateKeyFile(keyFile)),
    );
    const added = sign + attest - hash;
    const ok = added <= 5;
    const table = {
      title: `Ed25519 signing and attesting a ${steps}-step episode vs hashing its files`,
      columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
      rows: [
        ["hash every artifact file, the baseline (ms)", fixed(hash), "", "", "", ""],
        ["sign the manifest: key file read, canonical JSON, Ed25519 (ms)", fixed(sign), "", "", "", ""],
        ["attest: verify (hash every file), statement, DSSE (ms)", fixed(attest), "", "", "", ""],
        [
          "sign + attest, beyond hashing the files (ms)",
          fixed(added),
          `hash ${fixed(hash)}`,
          `${fixed((sign + attest) / hash)}×`,
          "≤ +5 ms",
          ok ? "yes" : "NO",
        ],
      ],
      notes: [
        `${files.length} files, ${(bytes / 1048576).toFixed(1)} MiB; best of ${rounds} rounds, taken in turns`,
      ],
    };
    return { name: "signing", tables: [table], ok };
  } finally {
    delete process.env.NOEMA_MAX_PLAN_STEPS;
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
