/**
 * The MCP conformance suite is unchanged by `noema mcp`: the real
 * `@modelcontextprotocol/conformance` CLI (server scenarios, run under Bun: it
 * needs Node 22's `fs.globSync`) against the real
 * `@modelcontextprotocol/server-everything` in Streamable-HTTP mode gives,
 * scenario by scenario, the same passed and failed checks through
 * `noema mcp --upstream URL --listen 127.0.0.1:0` as direct. Every process is a
 * child (Bun or Node from node_modules and PATH), so the file runs the same
 * under Deno and Bun.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { runChild } from "./helpers/child.ts";
import { cliCommand, REPO } from "./helpers/cli.ts";
import { env, HANG_MS, withBound } from "./helpers/mcp_gateway.ts";
import { freePort } from "./helpers/postgres.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-mcp-conformance-");
after(() => tmp.cleanup());

const MODULES = join(REPO, "node_modules");
const BUN = join(MODULES, ".bin", "bun");
const CONFORMANCE = join(MODULES, "@modelcontextprotocol", "conformance", "dist", "index.js");
const EVERYTHING = join(MODULES, "@modelcontextprotocol", "server-everything", "dist", "index.js");
/** The scenario that sends a foreign Host and Origin, and a local one. */
const REBINDING = "dns-rebinding-protection";

/** A long-running child; resolves with the first match of `ready` in its stderr. */
function startChild(cmd: string, args: string[], childEnv: Record<string, string>, ready: RegExp, cwd: string) {
  const child: ChildProcess = spawn(cmd, args, { cwd, env: childEnv, stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  const match = withBound(
    new Promise<RegExpExecArray>((resolve, reject) => {
      child.stderr!.on("data", (d: Uint8Array) => {
        err += new TextDecoder().decode(d);
        const m = ready.exec(err);
        if (m) resolve(m);
      });
      void exited.then((code) => reject(new Error(`${args.join(" ")} exited ${code}: ${err}`)));
    }),
    `${cmd} ready`,
  );
  return { match, stop: () => (child.kill("SIGTERM"), withBound(exited, "exit")) };
}

/** Runs every server scenario against `url`; the summary as scenario → "passed/failed" checks. */
async function conformance(url: string, cwd: string): Promise<Map<string, string>> {
  mkdirSync(cwd, { recursive: true });
  const r = await runChild(BUN, [CONFORMANCE, "server", "--url", url], { cwd, timeoutMs: HANG_MS });
  assert.notEqual(r.code, null, `conformance against ${url} hung:\n${r.stdout}\n${r.stderr}`);
  const summary = r.stdout.slice(r.stdout.indexOf("=== SUMMARY ==="));
  const out = new Map<string, string>();
  for (const m of summary.matchAll(/^[✓✗] (\S+): (\d+) passed, (\d+) failed$/gm)) out.set(m[1], `${m[2]}/${m[3]}`);
  assert.ok(out.size > 0, `no scenario in the summary against ${url}:\n${r.stdout}\n${r.stderr}`);
  return out;
}

describe("noema mcp under the MCP conformance suite", () => {
  it("passes and fails the same scenarios, check by check, through the gateway as direct", async () => {
    const base = join(tmp.path, "conformance");
    mkdirSync(base, { recursive: true });
    const port = await freePort(); // server-everything takes its port from PORT and cannot be told 0
    const everything = startChild(
      "node",
      [EVERYTHING, "streamableHttp"],
      { ...env(join(base, "unused")), PORT: String(port) },
      /listening on port/,
      base,
    );
    await everything.match;
    const upstream = `http://127.0.0.1:${port}/mcp`;
    const gateway = startChild(
      cliCommand()[0],
      [...cliCommand().slice(1), "mcp", "--name", "everything", "--upstream", upstream, "--listen", "127.0.0.1:0"],
      env(join(base, "root")),
      /listening on (http:\/\/\S+)/,
      base,
    );
    try {
      const through = (await gateway.match)[1];
      const direct = await conformance(upstream, join(base, "direct"));
      const gated = await conformance(through, join(base, "gated"));
      const passed = (m: Map<string, string>) => [...m].filter(([, v]) => v.endsWith("/0")).map(([k]) => k).sort();
      assert.ok(passed(direct).length >= 8, `direct passes only ${passed(direct).join(", ")}`);
      // The one scenario the gateway passes better: it refuses a foreign Host or Origin itself (it asks the upstream
      // with the upstream's own Host, so the upstream's check could not protect it), server-everything does not.
      assert.equal(gated.get(REBINDING), "2/0", `${REBINDING} through the gateway`);
      assert.notEqual(direct.get(REBINDING), undefined, `${REBINDING} direct`);
      for (const m of [direct, gated]) m.delete(REBINDING);
      assert.deepEqual(passed(gated), passed(direct), "the same scenarios pass through the gateway as direct");
      assert.deepEqual(Object.fromEntries(gated), Object.fromEntries(direct), "the same checks pass and fail");
    } finally {
      await gateway.stop();
      await everything.stop();
    }
  });
});
