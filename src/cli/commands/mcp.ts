/**
 * `noema mcp [options] -- <server command…>`: the governed MCP gateway (see
 * `src/agents/mcp/gateway.ts`), an MCP server over stdio that an MCP client
 * (Claude Desktop, Claude Code, Cursor…) starts instead of the real server;
 * and `noema mcp pins [--accept SERVER TOOL]`, the tools pinned at first
 * sight and the changed ones blocked until accepted.
 *
 * stdout belongs to the MCP protocol: the gateway writes nothing else there;
 * what it has to say goes to stderr (the client's server log).
 *
 * @module
 */
import { existsSync } from "node:fs";
import process from "node:process";
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { runGateway } from "../../agents/mcp/gateway.ts";
import { runHttpGateway } from "../../agents/mcp/http_gateway.ts";
import { shownUrl } from "../../agents/mcp/upstream_url.ts";
import { waitLocalDecision } from "../../agents/mcp/local_wait.ts";
import { acceptTool, pinnedServers, readPins } from "../../agents/mcp/pins.ts";
import type { AwaitDecision } from "../../agents/mcp/session.ts";
import { EXIT, NoemaError } from "../../errors.ts";
import { childEnv } from "../../plugins/process.ts";
import { resolveRunSettings } from "../../runtime/load_settings.ts";
import type { RunOptions } from "../../runtime/run.ts";
import { episodeDirFor, resolveRoot } from "../../store/layout.ts";
import { type CliContext, examples, globalOptions, type RegisterCommand } from "../context.ts";
import { usageError } from "../errors.ts";
import { oneLine } from "../output.ts";
import { markHookEpisode } from "../hook_publish.ts";
import { hookApprovalWait } from "../hook_wait.ts";
import { storeFromEnvironment } from "../store_option.ts";
import { parseDuration } from "../time_args.ts";
import { addLimitOptions, addMetaOptions, addModeOptions, addPolicyOption, gateRunOptions } from "../run_options.ts";

/** `noema mcp`'s options and help. */
function mcpCommand(program: CommandUnknownOpts) {
  const command = program
    .command("mcp")
    .summary("govern an MCP server: a stdio gateway where each tool call meets the policies")
    .description(
      "Serve MCP over stdio in place of the server given after --, which it starts as its child: every message\n" +
        "passes through unchanged, except that each tools/call is a governed step of the session's episode (using\n" +
        "mcp): the policies, the rules (mcp__<server>__<tool>, mcp__<server>__*) and the tool pins decide; a refused\n" +
        "call never reaches the server and the client gets a tool error saying why. tools/list leaves out the tools\n" +
        "a deny rule always denies. Each tool's description, schemas, title and annotations are pinned at first\n" +
        "sight; a later change blocks the tool (tool_changed) until accepted with noema mcp pins --accept. The\n" +
        "episode is sealed when the client disconnects (aborted when the server exits first). See docs/mcp.md.",
    )
    .argument("[command...]", "the real MCP server's command line, after --")
    .option("--name <server>", "the server's name in tool names mcp__<server>__<tool> (use the client's config key)")
    .option(
      "--wait <duration>",
      "a call that needs approval pauses the episode and waits (e.g. 10m) for noema approve|reject ID (with a " +
        "shared store: decided on any machine); when the wait runs out the call is rejected. Without it such a call " +
        "is refused",
    )
    .option("--list-denied", "list the tools a deny rule always denies too (their calls are still denied)")
    .option(
      "--upstream <url>",
      "govern a Streamable HTTP MCP server at this URL instead of a command (with --listen; no command after --)",
    )
    .option("--listen <host:port>", "with --upstream: where to serve (a loopback address; default 127.0.0.1:0)");
  const gated = addLimitOptions(addModeOptions(addPolicyOption(command)));
  return addMetaOptions(gated, "the directory relative rule paths start from (default: the current directory)")
    .addHelpText(
      "after",
      examples(
        ["noema mcp --name fs -- npx -y @modelcontextprotocol/server-filesystem .", "a governed filesystem server"],
        ["noema mcp --name fs --rules mcp-rules.jsonc -- node server.js", "deny rules such as mcp__fs__write_file"],
        ["noema mcp --name web --upstream http://127.0.0.1:3000/mcp --listen 127.0.0.1:8931", "over HTTP"],
        ["noema mcp pins", "the pinned tools, and those changed since"],
        ["noema mcp pins --accept fs write_file", "accept a changed tool"],
      ) +
        '\nIn a client\'s config: "command": "npx", "args": ["noema", "mcp", "--name", "fs", "--", …server…].\n' +
        "Exit codes: 0 the client disconnected (episode sealed), 1 the server exited or could not start first,\n" +
        "2 bad options.\n",
    );
}

/** The parsed options. */
type McpOptions = ReturnType<ReturnType<typeof mcpCommand>["opts"]>;

/** The approval wait of `--wait`: through the shared store when one is configured, else local decisions. */
function approvalWait(root: string, wait: string | undefined): AwaitDecision | undefined {
  if (wait === undefined) return undefined;
  const ms = parseDuration(wait, "--wait");
  if (storeFromEnvironment() !== null) return hookApprovalWait(root, ms, "deny");
  return (episodeId, checkpointId, signal) =>
    waitLocalDecision(episodeDirFor(episodeId, root), checkpointId, ms, signal);
}

/** The run settings: the flags over noema.jsonc, as `noema run` reads them. */
function runSettings(opts: McpOptions, root: string): Omit<RunOptions, "using"> {
  const flags: RunOptions = { ...gateRunOptions(opts), workspace: opts.workspace, root };
  const { options } = resolveRunSettings({ taskOrFile: "-", options: flags });
  for (const p of options.policies ?? []) {
    if (typeof p === "string" && !existsSync(p)) {
      throw new NoemaError("not_found", "policy file not found", { file: p, exitCode: EXIT.USAGE });
    }
  }
  const { using: _u, steps: _s, planner: _p, args: _a, ...rest } = options;
  return { ...rest, root };
}

/** Whether vetoes are enforced, so that a tool a rule always denies can be left out of tools/list. */
function enforced(o: Omit<RunOptions, "using">): boolean {
  const gate = o.governance ?? "enforce";
  return (o.mode ?? "meta") === "meta" && gate === "enforce" && o.intuition_mode !== "advisory";
}

async function serve(ctx: CliContext, argv: string[], opts: McpOptions, root: string): Promise<void> {
  if (opts.upstream !== undefined && argv.length > 0) {
    throw usageError("give either --upstream URL or a command, not both");
  }
  if (opts.listen !== undefined && opts.upstream === undefined) throw usageError("--listen goes with --upstream URL");
  if (argv.length === 0 && opts.upstream === undefined) {
    throw usageError("give the MCP server's command after --: noema mcp -- <command…> (or --upstream URL)");
  }
  if (opts.name !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(opts.name)) {
    throw usageError(`--name ${JSON.stringify(opts.name)}: letters, digits, _ and - only (at most 64)`);
  }
  const options = runSettings(opts, root);
  const awaitDecision = approvalWait(root, opts.wait);
  const { policyFilesInWorkers } = await import("../../plugins/loader.ts");
  policyFilesInWorkers(); // a policy looping for ever is stopped at its timeout, never wedges the gateway
  // The client stops its server with SIGTERM 2 s after closing its stdin: the episode is sealed before the exit.
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  // Kept until the process exits (under Deno, a signal listener removed while it ends lets the signal kill it).
  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(sig, onSignal);
  const shared = {
    root,
    ...(opts.name !== undefined ? { server: opts.name } : {}),
    session: { options, ...(awaitDecision ? { awaitDecision } : {}) },
    ...(opts.listDenied || !enforced(options) ? {} : { hideDenied: options.rules ?? [] }),
    cwd: options.workspace ?? process.cwd(),
    log: (line: string) => ctx.out.note(line),
  };
  if (opts.upstream !== undefined) {
    const { host, port } = listenAddress(opts.listen ?? "127.0.0.1:0");
    const upstream = upstreamUrl(opts.upstream);
    const sealed = await runHttpGateway({
      ...shared,
      upstream,
      host,
      port,
      signal: stop.signal,
      onListening: (url) => ctx.out.note(`noema mcp: listening on ${url} (upstream ${shownUrl(upstream)})`),
    });
    for (const id of sealed) sealedNote(ctx, root, id);
    return;
  }
  const end = await runGateway({
    command: argv[0],
    args: argv.slice(1),
    env: childEnv(),
    ...shared,
    input: process.stdin,
    output: process.stdout,
    signal: stop.signal,
  });
  for (const id of end.episodeIds) sealedNote(ctx, root, id);
  ctx.exitCode = end.exitCode === 0 ? EXIT.OK : EXIT.ERROR;
}

/**
 * Says an episode was sealed and, with a shared store, marks it pending: after the command, a background `noema
 * sync` publishes it (as after a run), so the fleet sees the session like any run.
 */
function sealedNote(ctx: CliContext, root: string, id: string): void {
  ctx.out.note(`noema mcp: episode ${id} sealed`);
  markHookEpisode(root, () => id);
}

/** `--listen HOST:PORT`, on a loopback address only (the gateway authenticates no one). */
function listenAddress(text: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:]+\]|[^:]+):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw usageError(`--listen ${JSON.stringify(text)}: expected HOST:PORT`);
  const host = m[1].replace(/^\[|\]$/g, "");
  if (!["127.0.0.1", "::1", "localhost"].includes(host)) {
    throw usageError(
      `--listen ${text}: only a loopback address (127.0.0.1, ::1, localhost): noema mcp has no authentication`,
    );
  }
  return { host, port };
}

function upstreamUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usageError("--upstream: not a URL"); // not echoed: it may hold a secret
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw usageError(`--upstream ${shownUrl(url)}: not http(s)`);
  }
  return url.href;
}

/** Registers `noema mcp` and `noema mcp pins`. */
export const registerMcp: RegisterCommand = (program, ctx: CliContext) => {
  const mcp = mcpCommand(program);
  mcp.action(async (argv, opts, cmd) => {
    await serve(ctx, argv, opts, resolveRoot(globalOptions(cmd)));
  });
  mcp
    .command("pins")
    .summary("list the pinned MCP tools, or accept a changed one")
    .description(
      "List each MCP server's tools pinned by noema mcp (the sha256 of their description, schemas, title and\n" +
        "annotations at first sight) and those changed since, which are blocked; --accept SERVER TOOL pins a changed tool's new\n" +
        "digest, which unblocks it (in running gateways too, at the next call).",
    )
    .option("--accept <server_tool...>", "accept the change of this tool: SERVER TOOL")
    .option("--json", "print the pins as JSON ({servers: {<server>: {tools: {<tool>: pin}}}})")
    .addHelpText(
      "after",
      examples(
        ["noema mcp pins", "each server's tools: pinned, or CHANGED (blocked)"],
        ["noema mcp pins --accept fs write_file", "pin write_file's new description, schemas, title and annotations"],
      ) + "\nExit codes: 0 listed or accepted, 2 an unknown server or tool, or a tool that is not changed.\n",
    )
    .action((opts, cmd) => pins(ctx, opts, resolveRoot(globalOptions(cmd))));
};

function pins(ctx: CliContext, opts: { accept?: string[]; json?: true }, root: string): void {
  if (opts.accept !== undefined) {
    if (opts.accept.length !== 2) throw usageError("--accept takes two words: SERVER TOOL");
    const [server, tool] = opts.accept;
    const pin = acceptTool(root, server, tool);
    if (opts.json) return ctx.out.json({ server, tool, pin });
    return ctx.out.line(`accepted ${server} ${tool}: pinned ${pin.digest}`);
  }
  const servers = Object.fromEntries(pinnedServers(root).map((s) => [s, { tools: readPins(root, s).tools }]));
  if (opts.json) return ctx.out.json({ servers });
  if (Object.keys(servers).length === 0) return ctx.out.line("no MCP tools pinned yet");
  for (const [server, { tools }] of Object.entries(servers)) {
    for (const [name, pin] of Object.entries(tools)) {
      const state = pin.changed ? `CHANGED (blocked): now ${pin.changed.digest}` : "pinned";
      // A tool's name is the server's: an ESC[8m in it would hide the CHANGED that follows on the reader's terminal.
      ctx.out.line(`${server}  ${oneLine(name)}  ${pin.digest.slice(0, 19)}…  ${state}`);
    }
  }
}
