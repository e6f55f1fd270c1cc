// Rules in noema.jsonc deny Bash(git push:*), hidden in `cd sub && … && git push`, in the three agent dialects: the
// real Claude Code (noema run --using claude-code), Codex CLI and Gemini CLI (noema hook …), offline, each against a
// scripted model server on 127.0.0.1. No --policy anywhere: the rules are the only governance.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { CODEX_EVENTS } from "../src/agents/codex/dialect.ts";
import { GEMINI_EVENTS } from "../src/agents/gemini/dialect.ts";
import { validate } from "../src/validate/validate.ts";
import { cliCommand, REPO } from "./helpers/cli.ts";
import { runChild } from "./helpers/child.ts";
import { tempDir } from "./helpers/tmp.ts";
import { bash, claudeSessions } from "./helpers/claude_session.ts";
import { startResponsesServer } from "./helpers/responses_server.ts";
import { startGeminiServer } from "./helpers/gemini_server.ts";
import { acts, events } from "./helpers/agent_episode.ts";

const tmp = tempDir("noema-rules-agents-");
after(() => tmp.cleanup());

const CONFIG = {
  rules: {
    deny: [{ rule: "Bash(git push:*)", reason: "pushes go through review" }],
    allow: ["Bash(echo:*)"],
    default: "allow",
  },
};
/** Would leave ran.txt behind if any part of it ran. */
const PUSH = "cd sub && touch ../ran.txt && git push origin main";
const REASON = /Rules@1\.0.*denied by rule "Bash\(git push:\*\)": pushes go through review/s;
const TIMEOUT = 90_000;
const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
let n = 0;

/** A workspace holding noema.jsonc with the rules and a `sub` folder; a HOME; a root; the hook servers' folder. */
function box() {
  const base = join(tmp.path, `t${++n}`);
  const dirs = { home: join(base, "home"), workspace: join(base, "ws"), servers: join(base, "servers") };
  mkdirSync(join(dirs.workspace, "sub"), { recursive: true });
  mkdirSync(dirs.home, { recursive: true });
  writeFileSync(join(dirs.workspace, "noema.jsonc"), JSON.stringify(CONFIG, null, 2));
  return { ...dirs, root: join(base, "root") };
}

/** The hook command an agent runs (no --policy: the rules come from noema.jsonc in its cwd). */
const hookCommand = (agent: string, b: ReturnType<typeof box>, extra: string[] = []) =>
  `NOEMA_USER_RULES= NOEMA_HOOK_SERVER_DIR=${quote(b.servers)} ` +
  [...cliCommand(), "hook", agent, "--root", b.root, ...extra].map(quote).join(" ");

/** The one episode an agent session left under the root. */
function sessionEpisode(root: string, agent: string): string {
  const sessions = readdirSync(join(root, "sessions", agent)).filter((f) => f.endsWith(".json"));
  assert.equal(sessions.length, 1, `one ${agent} session is indexed`);
  const entry = JSON.parse(readFileSync(join(root, "sessions", agent, sessions[0]), "utf8"));
  return join(root, "episodes", entry.episode_id);
}

/** The push was vetoed by the rules and did not run; the episode says so and validates. */
function assertDenied(dir: string, workspace: string): void {
  assert.equal(existsSync(join(workspace, "ran.txt")), false, "no part of the denied command ran");
  const gov = events(dir).filter((e) => e.phase === "governance" && e.payload.decision === "veto");
  assert.ok(gov.some((e) => e.payload.policy_id === "Rules@1.0" && REASON.test(`Rules@1.0 ${e.payload.message}`)));
  assert.deepEqual(acts(dir).map((a) => [a.payload.input.command, a.payload.step_status]), [[PUSH, "vetoed"]]);
  assert.deepEqual(validate(dir).problems, []);
}

const CODEX = join(REPO, "node_modules", ".bin", "codex");
const haveCodex = existsSync(CODEX) &&
  readdirSync(join(REPO, "node_modules", "@openai")).some((d) => d.startsWith("codex-"));
const GEMINI = join(REPO, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js");

describe("Rules in noema.jsonc deny Bash(git push:*) inside a compound, in all three agent dialects", () => {
  test("Claude Code (noema run --using claude-code)", { timeout: TIMEOUT }, async () => {
    const sessions = claudeSessions(join(tmp.path, "claude"));
    const s = await sessions([{ text: "Pushing", tools: [bash("toolu_p1", PUSH)] }, { text: "Understood." }]);
    try {
      mkdirSync(join(s.box.workspace, "sub"));
      writeFileSync(join(s.box.workspace, "noema.jsonc"), JSON.stringify(CONFIG));
      const r = await s.run("push the fix", ["--json"]);
      assert.equal(r.code, 0, r.stderr);
      const result = s.server.toolResults().get("toolu_p1");
      assert.ok(result?.is_error, "the model receives a denied tool result");
      assert.match(result!.content, REASON);
      assertDenied(JSON.parse(r.stdout).episode_dir, s.box.workspace);
    } finally {
      await s.server.close();
    }
  });

  test("Codex CLI (noema hook codex)", { timeout: TIMEOUT, skip: haveCodex ? false : "no codex binary" }, async () => {
    const server = await startResponsesServer([
      { calls: [{ call_id: "call_p1", arguments: { cmd: PUSH } }] },
      { text: "Understood." },
    ]);
    try {
      const b = box();
      const codexHome = join(b.home, ".codex");
      mkdirSync(codexHome);
      writeFileSync(
        join(codexHome, "config.toml"),
        `model = "gpt-test"\nmodel_provider = "scripted"\ncheck_for_update_on_startup = false\n` +
          `[model_providers.scripted]\nname = "scripted"\nbase_url = ${JSON.stringify(server.url)}\n` +
          `wire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n`,
      );
      const handler = { hooks: [{ type: "command", command: hookCommand("codex", b), timeout: 60 }] };
      const hooks = Object.fromEntries(CODEX_EVENTS.map((e) => [e, [handler]]));
      writeFileSync(join(codexHome, "hooks.json"), JSON.stringify({ hooks }));
      const args = ["exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "--sandbox", "workspace-write"];
      const r = await runChild(CODEX, [...args, "--json", "-C", b.workspace, "push the fix"], {
        cwd: b.workspace,
        timeoutMs: TIMEOUT,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          HOME: b.home,
          CODEX_HOME: codexHome,
          SCRIPTED_API_KEY: "test",
          NO_COLOR: "1",
          NOEMA_ROOT: "",
        },
      });
      assert.equal(r.code, 0, `codex exec: ${r.stderr}\n${r.stdout}`);
      assert.match(server.toolOutputs().get("call_p1") ?? "", REASON);
      assertDenied(sessionEpisode(b.root, "codex"), b.workspace);
    } finally {
      await server.close();
    }
  });

  test(
    "Gemini CLI (noema hook gemini)",
    { timeout: TIMEOUT, skip: existsSync(GEMINI) ? false : "no gemini" },
    async () => {
      const server = await startGeminiServer([{ calls: [{ args: { command: PUSH } }] }, { text: "Understood." }]);
      try {
        const b = box();
        const group = {
          matcher: "*",
          hooks: [{ type: "command", name: "noema", command: hookCommand("gemini", b, ["--print"]), timeout: 60_000 }],
        };
        mkdirSync(join(b.home, ".gemini"));
        writeFileSync(
          join(b.home, ".gemini", "settings.json"),
          JSON.stringify({
            security: { auth: { selectedType: "gemini-api-key" } },
            general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
            privacy: { usageStatisticsEnabled: false },
            hooks: Object.fromEntries(GEMINI_EVENTS.map((e) => [e, [group]])),
          }),
        );
        const args = [
          GEMINI,
          "-p",
          "push the fix",
          "--approval-mode",
          "yolo",
          "--skip-trust",
          "--output-format",
          "json",
        ];
        const r = await runChild("node", args, {
          cwd: b.workspace,
          timeoutMs: TIMEOUT,
          env: {
            PATH: process.env.PATH ?? "/usr/bin:/bin",
            HOME: b.home,
            GEMINI_API_KEY: "test",
            // The CLI would start a second Node with a larger heap and run in it (1.2 s of a core, each session).
            GEMINI_CLI_NO_RELAUNCH: "true",
            GOOGLE_GEMINI_BASE_URL: server.url,
            NO_COLOR: "1",
            NOEMA_ROOT: "",
          },
        });
        assert.equal(r.code, 0, `gemini: ${r.stderr}\n${r.stdout}`);
        assert.match(String(server.functionResponses()[0].response.error), REASON);
        assertDenied(sessionEpisode(b.root, "gemini"), b.workspace);
      } finally {
        await server.close();
      }
    },
  );
});
