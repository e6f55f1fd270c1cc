/**
 * Helpers of the `noema mcp` gateway tests: a case directory, an SDK client
 * connected through the real CLI to the test server (tests/helpers/mcp_fs_server.ts),
 * the server's calls log and the episode's artifacts.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { cliCommand, REPO, runtimeCommand } from "./cli.ts";

/** The test MCP server. */
export const SERVER = join(REPO, "tests", "helpers", "mcp_fs_server.ts");
/** A bound that only catches hangs. */
export const HANG_MS = 120_000;

/** A fresh case under `parent`: a served directory, the server's calls log, a noema root. */
export function setup(parent: string, name: string) {
  const base = join(parent, name);
  const dir = join(base, "served");
  mkdirSync(dir, { recursive: true });
  return { base, dir, calls: join(base, "calls.jsonl"), root: join(base, "root") };
}

/** The test server's command line under the runtime running the tests. */
export function serverCommand(dir: string, calls: string): string[] {
  return [...runtimeCommand(), SERVER, dir, calls];
}

/** The environment of a gateway: no NOEMA_* of the caller, the case's root. */
export function env(root: string, extra: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("NOEMA_")) out[k] = v;
  return { ...out, NO_COLOR: "1", NOEMA_ROOT: root, ...extra };
}

/** An SDK client connected to `noema mcp [flags] -- <server>`. */
export async function connect(
  c: ReturnType<typeof setup>,
  flags: string[],
  extraEnv: Record<string, string> = {},
): Promise<{ client: Client; stderr: () => string; pid: () => number | null }> {
  const [command, ...args] = [...cliCommand(), "mcp", ...flags, "--", ...serverCommand(c.dir, c.calls)];
  let err = "";
  const transport = new StdioClientTransport({
    command,
    args,
    env: env(c.root, extraEnv),
    cwd: c.base,
    stderr: "pipe",
  });
  transport.stderr?.on("data", (d: Uint8Array) => err += new TextDecoder().decode(d));
  const client = new Client({ name: "gateway-test", version: "1.0" });
  await withBound(client.connect(transport), "connect");
  return { client, stderr: () => err, pid: () => transport.pid };
}

/** A promise with a bound that only catches hangs. */
export async function withBound<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${HANG_MS} ms`)), HANG_MS);
  });
  try {
    return await Promise.race([p, hang]);
  } finally {
    clearTimeout(timer);
  }
}

export function serverCalls(calls: string): { tool: string; arguments: Record<string, unknown> }[] {
  if (!existsSync(calls)) return [];
  return readFileSync(calls, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

export function events(root: string, id: string): Record<string, unknown>[] {
  return readFileSync(join(root, "episodes", id, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
}

/** The only episode under the root, once sealed (its manifest written after the client closed). */
export async function sealedEpisode(root: string): Promise<string> {
  const until = Date.now() + HANG_MS;
  for (;;) {
    const ids = existsSync(join(root, "episodes"))
      ? readdirSync(join(root, "episodes")).filter((f) => f.startsWith("ep_"))
      : [];
    if (ids.length === 1 && existsSync(join(root, "episodes", ids[0], "manifest.json"))) return ids[0];
    if (Date.now() > until) throw new Error(`no sealed episode under ${root}: ${ids.join(", ")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function rulesFile(base: string, rules: Record<string, unknown>): string {
  const path = join(base, "rules.jsonc");
  writeFileSync(path, JSON.stringify(rules));
  return path;
}

/** A tool result as the tests read it. */
export type CallResult = { content: { type: string; text: string }[]; isError?: boolean; structuredContent?: unknown };

/** A raw JSON-RPC client of `noema mcp` (no SDK): lines written, answers collected by id. */
export interface RawGateway {
  /** Every message the gateway wrote to the client, in order. */
  received: Record<string, unknown>[];
  send(message: unknown): void;
  /** Writes one line as it is (no JSON encoding). */
  sendLine(text: string): void;
  /** The answer with this id, once it came. */
  answer(id: number): Promise<Record<string, unknown>>;
  /** Closes stdin (the client disconnects) and waits for the exit code. */
  close(): Promise<number | null>;
}

/**
 * Starts `noema mcp [flags] -- <server>` with a raw line client, initialized.
 *
 * @example
 * ```ts
 * const gw = await rawGateway(c, ["--name", "fs"]);
 * gw.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
 * await gw.answer(2);
 * ```
 */
export async function rawGateway(
  c: ReturnType<typeof setup>,
  flags: string[],
  server: string[] = serverCommand(c.dir, c.calls),
): Promise<RawGateway> {
  const [command, ...args] = [...cliCommand(), "mcp", ...flags, "--", ...server];
  const child = spawn(command, args, { cwd: c.base, env: env(c.root), stdio: ["pipe", "pipe", "ignore"] });
  const answers = new Map<unknown, Record<string, unknown>>();
  const received: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  let rest = "";
  child.stdout!.on("data", (d: Uint8Array) => {
    rest += new TextDecoder().decode(d);
    const lines = rest.split("\n");
    rest = lines.pop()!;
    for (const line of lines.filter(Boolean)) {
      const msg = JSON.parse(line);
      received.push(msg);
      if (msg.id !== undefined && msg.method === undefined) answers.set(msg.id, msg);
    }
    waiters.splice(0).forEach((w) => w());
  });
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  const gw: RawGateway = {
    received,
    send: (m) => child.stdin!.write(JSON.stringify(m) + "\n"),
    sendLine: (text) => child.stdin!.write(text + "\n"),
    answer: (id) =>
      withBound(
        (async () => {
          while (!answers.has(id)) await new Promise<void>((r) => waiters.push(r));
          return answers.get(id)!;
        })(),
        `answer ${id}`,
      ),
    close: () => {
      child.stdin!.end();
      return withBound(exited, "exit");
    },
  };
  gw.send({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  });
  await gw.answer(0);
  gw.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  return gw;
}
