/**
 * What the `noema serve` tests share: a root with real episodes made by the
 * real CLI (a run waiting for approval, hostile content, plain runs), and
 * the real `noema serve` started as a child process on a free port.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { cli, cliCommand, REPO } from "./cli.ts";

/** The approval gate policy of the repository. */
export const GATE = join(REPO, "plugins", "policies", "approval-gate.ts");

/** Hostile text: markup and attribute breakers that must stay inert wherever it is shown. */
export const HOSTILE = `<script>window.__xss=1</script><img src=x onerror="window.__xss=2">"'><svg onload=alert(1)>`;

/** Runs `noema <args>` (which include `--json`) under `root`; returns the parsed result. */
export function runJson(root: string, args: string[]): Record<string, unknown> {
  const r = cli(["--root", root, ...args], { timeoutMs: 120_000 });
  const line = r.stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(line);
  } catch {
    throw new Error(`noema ${args.join(" ")}: exit ${r.code}\n${r.stdout}\n${r.stderr}`);
  }
}

/**
 * A run waiting for approval: the approval gate stops `sh -c "echo deploy …"`.
 *
 * @example
 * ```ts
 * import { pausedRun } from "./helpers/serve.ts";
 * const id = pausedRun("/tmp/r", "ship it");
 * ```
 */
export function pausedRun(root: string, task: string, tags: string[] = []): string {
  const r = runJson(root, [
    "run",
    task,
    "--using",
    "shell",
    "--policy",
    GATE,
    ...tags.flatMap((t) => ["--tag", t]),
    "--json",
    "--",
    "sh",
    "-c",
    "echo deploy prod",
  ]);
  if (r.status !== "pending") throw new Error(`expected a paused run, got ${JSON.stringify(r)}`);
  return String(r.episode_id);
}

/** A policy file whose advice is hostile markup (a hint on every action). */
export function hostilePolicy(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "hostile.ts");
  writeFileSync(
    path,
    `export default { name: "Hostile", version: "1.0", api: "1.0",
  advise() { return { kind: "hint", advice: ${JSON.stringify(HOSTILE)}, confidence: 0.5 }; } };`,
  );
  return path;
}

/**
 * A finished run whose task, tag value, tool output and policy advice are hostile markup.
 *
 * @example
 * ```ts
 * import { hostileRun } from "./helpers/serve.ts";
 * const id = hostileRun("/tmp/r", "/tmp/policies");
 * ```
 */
export function hostileRun(root: string, policyDir: string): string {
  const r = runJson(root, [
    "run",
    `task ${HOSTILE}`,
    "--using",
    "shell",
    "--policy",
    hostilePolicy(policyDir),
    "--tag",
    `evil=${HOSTILE.replaceAll(",", " ")}`,
    "--json",
    "--",
    "printf",
    "%s",
    HOSTILE,
  ]);
  return String(r.episode_id);
}

/** A running `noema serve`. */
export interface Served {
  /** Its URL, ending in `/`. */
  url: string;
  /** The generated token, if one was printed. */
  token: string | null;
  /** Stops it (SIGTERM); resolves to its exit code. */
  stop(): Promise<number | null>;
  /** What it wrote on stderr so far. */
  stderr(): string;
}

/**
 * Starts `noema serve --root ROOT --listen LISTEN --json` and waits for its URL.
 *
 * @example
 * ```ts
 * import { startServe } from "./helpers/serve.ts";
 * const s = await startServe("/tmp/r");
 * await fetch(s.url);
 * await s.stop();
 * ```
 */
export function startServe(
  root: string,
  options: { listen?: string; args?: string[]; env?: Record<string, string | undefined> } = {},
): Promise<Served> {
  const [cmd, ...argv] = cliCommand();
  const env: Record<string, string> = {};
  for (
    const [k, v] of Object.entries({ ...process.env, NO_COLOR: "1", NOEMA_SERVE_TOKEN: undefined, ...options.env })
  ) {
    if (v !== undefined) env[k] = v;
  }
  const child = spawn(cmd, [
    ...argv,
    "--root",
    root,
    "serve",
    "--listen",
    options.listen ?? "127.0.0.1:0",
    "--json",
    ...(options.args ?? []),
  ], { cwd: REPO, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  return new Promise((resolve, reject) => {
    child.stderr.on("data", (d) => (err += d));
    child.stdout.on("data", (d) => {
      out += d;
      const nl = out.indexOf("\n");
      if (nl < 0) return;
      const info = JSON.parse(out.slice(0, nl)) as { url: string; token: string | null };
      resolve({
        url: info.url,
        token: info.token,
        stderr: () => err,
        stop: () => {
          child.kill("SIGTERM");
          return exited;
        },
      });
    });
    exited.then((code) => reject(new Error(`noema serve exited ${code}: ${err}`)));
  });
}

/**
 * A GET sent byte for byte over TCP (no client normalises its path or drops
 * its Host header): the status and the raw answer.
 *
 * @example
 * ```ts
 * import { rawGet } from "./helpers/serve.ts";
 * const r = await rawGet("http://127.0.0.1:7777/", "/episodes/%2e%2e");
 * ```
 */
export function rawGet(
  url: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const u = new URL(url);
  const all = { host: u.host, connection: "close", ...headers };
  const head = `GET ${path} HTTP/1.1\r\n${Object.entries(all).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n`;
  return new Promise((resolve, reject) => {
    const sock = connect(Number(u.port), u.hostname, () => sock.write(head));
    let text = "";
    sock.setEncoding("utf8");
    sock.on("data", (d) => (text += d));
    sock.on("error", reject);
    sock.on("close", () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text }));
  });
}
