/**
 * `noema serve`: the runs, episodes, approvals and comparisons in a browser,
 * and a JSON API, from this process (assets embedded). Loopback by default;
 * any other address needs a token.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { resolveRoot } from "../../store/layout.ts";
import { EXIT, NoemaError } from "../../errors.ts";
import { generatedTokens, isLoopback, parseTokens, type Tokens } from "../../serve/auth.ts";
import { canTellPeerUser } from "../../serve/peer_user.ts";
import { createApp } from "../../serve/app.ts";
import { parseListen, startServer } from "../../serve/server.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { projectScopeOf, storeUrlOf } from "../store_option.ts";
import { openSharedStore } from "../../shared_store/open.ts";
import { ProjectScopedStore } from "../../shared_store/project_scope.ts";

/**
 * Opens `url` in the desktop's browser; never fails the command. Where none can be opened (no opener, or the
 * opener found no browser: xdg-open exits 3 on a machine without one), `note` says so; the server goes on.
 */
function openBrowser(url: string, note: (message: string) => void): void {
  const cmd = process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  let said = false; // once: a child that cannot start may report both an error and an exit (Deno)
  const say = (why: string) => {
    if (!said) note(`noema serve: --open: no browser could be opened here (${why}); open ${url} yourself`);
    said = true;
  };
  try {
    const child = spawn(cmd, [url], { stdio: "ignore", detached: true });
    child.on(
      "error",
      (e) => say(`${cmd}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "not found" : e.message}`),
    );
    // Windows' explorer exits 1 even when it opened the page.
    child.on("exit", (code) => {
      if (code !== null && code !== 0 && process.platform !== "win32") say(`${cmd} exited ${code}`);
    });
    try {
      child.unref();
    } catch { /* Deno: a child that could not start has nothing to unref; its error event says why */ }
  } catch (e) {
    say((e as Error).message);
  }
}

/**
 * The tokens in force: NOEMA_SERVE_TOKEN, else none on loopback where the
 * system tells which user each connection belongs to (Linux), else a
 * generated one. Never none off loopback: a server another machine can reach
 * always needs a token; nor where another local user could not be told apart.
 */
function tokensFor(host: string): Tokens {
  const env = process.env.NOEMA_SERVE_TOKEN;
  const tokens = env !== undefined && env.trim() !== ""
    ? parseTokens(env)
    : isLoopback(host) && canTellPeerUser()
    ? parseTokens("")
    : generatedTokens();
  if (tokens.byToken.size === 0 && !isLoopback(host)) {
    throw new NoemaError("usage", `--listen ${host}: an address off loopback needs a token (NOEMA_SERVE_TOKEN)`, {
      exitCode: EXIT.USAGE,
    });
  }
  return tokens;
}

/** Registers `noema serve`. */
export function registerServe(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("serve")
    .summary("see runs, episodes and approvals in a browser (and a JSON API)")
    .description(
      "Serve a web app and a JSON API over the episodes of the root: the runs (filters, sorting, paging, live), " +
        "each episode (plan, verdicts, actions, verification, timeline, raw files; live while it runs), approvals " +
        "(approve or reject with a note, recorded as noema approve records it, then resume here) and two episodes " +
        "compared. Listens on loopback by default, answering only its own OS user; any other address needs a token " +
        "(NOEMA_SERVE_TOKEN, or one generated and printed once). Stops on Ctrl-C or SIGTERM.",
    )
    .option("--listen <host:port>", "address to listen on (port 0: any free port)", "127.0.0.1:7777")
    .option("--open", "open the app in the desktop's browser")
    .option("--read-only", "serve no approval page, form or API route")
    .option("--json", 'print {"url", "root", "store", "token", "read_only"} as one JSON line on start')
    .addHelpText(
      "after",
      examples(
        ["noema serve --open", "the runs of ./.noema at http://127.0.0.1:7777/"],
        ["noema serve --root ../other/.noema --listen 127.0.0.1:0", "another root, any free port"],
        ["NOEMA_SERVE_TOKEN=ana=$(openssl rand -hex 16) noema serve --listen 0.0.0.0:7777", "for a team"],
        ["noema serve --read-only", "look, never decide"],
        ["noema serve --store postgres://noema@db/noema", "the fleet's runs, from the shared store's catalog"],
      ) +
        "\nTokens: NOEMA_SERVE_TOKEN holds one token or several label=token pairs separated by commas; the label\n" +
        'names the decider of an approval. An empty entry (",", "a=,") is an error: off loopback, serve never\n' +
        "starts without a token. Clients send Authorization: Bearer <token>; the login form keeps it\n" +
        "in an HttpOnly cookie. Every request that changes state must come from the app's own origin.\n" +
        "API: GET /api/episodes (as list --json), /api/episodes/<id> (as view --json), /api/episodes/<id>/events\n" +
        "(NDJSON as stored), /api/approvals; POST /api/episodes/<id>/approve|reject {note, resume}.\n" +
        "With a shared store (--store, NOEMA_STORE), the runs come from its catalog, an episode is pulled to be read,\n" +
        "and a decision is recorded in the store (the machine holding the run applies it; here, at once).\n",
    )
    .action(async (opts, cmd) => {
      const { host, port } = parseListen(opts.listen);
      const root = resolve(resolveRoot(globalOptions(cmd)));
      const tokens = tokensFor(host);
      const closing = new AbortController();
      const log = (m: string) => {
        ctx.out.note(m);
        ctx.out.stderr.flush();
      };
      const pick = storeUrlOf(cmd);
      const project = pick === null ? undefined : projectScopeOf(cmd);
      const opened = pick === null ? null : await openSharedStore(pick.url, pick.from);
      const store = opened === null ? undefined : {
        // With a project in force, the runs and approvals of that project only.
        store: project === undefined ? opened : new ProjectScopedStore(opened, project),
        cache: mkdtempSync(join(tmpdir(), "noema-serve-")),
        root,
      };
      const readOnly = opts.readOnly === true;
      const app = createApp({ root, tokens, readOnly, log, closing: closing.signal, store });
      // Listening for the signals before the URL is printed: a client that stops the server at once is heard.
      const stopped = new Promise<void>((done) => {
        const stop = () => {
          process.off("SIGINT", stop);
          process.off("SIGTERM", stop);
          done();
        };
        process.on("SIGINT", stop);
        process.on("SIGTERM", stop);
      });
      const server = await startServer(host, port, (req, connection) => app.fetch(req, { connection }));
      const url = `${server.url}/`;
      if (opts.json) {
        ctx.out.line(
          JSON.stringify({
            url,
            root,
            store: store?.store.location ?? null,
            token: tokens.generated,
            read_only: readOnly,
          }),
        );
      } else {
        const what = store ? `the shared store ${store.store.location}` : `episodes of ${root}`;
        ctx.out.line(`noema serve: ${url} (${what}${readOnly ? ", read-only" : ""}); Ctrl-C stops`);
        if (tokens.generated !== null) {
          ctx.out.line(`token: ${tokens.generated}  (shown once; clients send Authorization: Bearer <token>)`);
        }
      }
      ctx.out.stdout.flush();
      if (opts.open) openBrowser(url, (m) => ctx.out.note(m));
      await stopped;
      closing.abort();
      await server.stop();
      if (store) {
        await store.store.close();
        rmSync(store.cache, { recursive: true, force: true });
      }
      ctx.out.note("noema serve: stopped");
    });
}
