// Never looser than Claude Code: the real Claude Code (node_modules/.bin/claude), offline against a scripted model
// on 127.0.0.1, makes every call of a corpus (tests/helpers/claude_rules_corpus.ts) with deny rules in its project
// settings (.claude/settings.json permissions.deny), and again with none (the control: what Claude Code refuses by
// itself is not a rule's doing). noema's rules engine decides the same calls with the same rules. The test fails when
// Claude Code's rules deny a call that noema allows, naming each; where noema is stricter it prints the table.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { lstatSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { loadRulesFile } from "../src/runtime/rules/load.ts";
import { rulesVerdict } from "../src/runtime/rules/policy.ts";
import { startAnthropicServer } from "./helpers/anthropic_server.ts";
import { runChild } from "./helpers/child.ts";
import { CLAUDE } from "./helpers/claude_session.ts";
import { corpus, type CorpusCall, denyRules, labelOf, layOut } from "./helpers/claude_rules_corpus.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-rules-diff-");
after(() => tmp.cleanup());

/**
 * A bound for hangs only: two Claude Code sessions of 153 calls each take about 10 s on an idle machine, and over
 * 3.5 minutes beside the whole suite and two busy loops (where a 240 s bound once cut them short).
 */
const TIMEOUT = 600_000;
/** Every tool of the corpus is pre-approved, so only deny rules (and Claude Code's own checks) refuse a call. */
const ALLOWED_TOOLS = ["Bash", "Read", "Edit", "Write", "Glob", "Grep", "NotebookEdit"];

/** One run's folders: a HOME, the workspace (Claude Code's cwd) and a folder outside it; the deny rules or none. */
function box(name: string, ruled: boolean) {
  const base = join(tmp.path, name);
  const dirs = { home: join(base, "home"), ws: join(base, "ws"), outside: join(base, "outside") };
  mkdirSync(dirs.home, { recursive: true });
  layOut(dirs.ws, dirs.outside);
  const deny = ruled ? denyRules(dirs.outside) : [];
  writeFileSync(join(dirs.ws, ".claude", "settings.json"), JSON.stringify({ permissions: { deny } }, null, 2));
  return { ...dirs, deny };
}

/** Whether a path is there (a symlink counts, wherever it points). */
function present(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** What Claude Code did with a call: refused it (its permission engine), and whether a secret came back. */
interface Observed {
  denied: boolean;
  /** The tool_result holds a secret of the workspace (`SECRET-…`): the call ran and read a denied file. */
  leaked: boolean;
  /** For a call let through that failed anyway (a tool's own check, a command's exit): the start of its error. */
  error: string;
}

/** What Claude Code did with each call (by corpus id), from its `permission_denials` and the tool_results it sent. */
async function claudeRun(dirs: ReturnType<typeof box>, calls: CorpusCall[]): Promise<Map<string, Observed>> {
  const turn = (n: number) =>
    calls.filter((c) => c.turn === n).map((c) => ({ id: `toolu_${c.id}`, name: c.name, input: c.input }));
  const server = await startAnthropicServer([
    { text: "Making the calls.", tools: turn(1) },
    { text: "And the edits.", tools: turn(2) },
    { text: "Then a cd.", tools: turn(3) },
    { text: "And another.", tools: turn(4) },
    { text: "Done." },
  ]);
  try {
    const r = await runChild(CLAUDE, [
      "-p",
      "make the calls",
      "--output-format",
      "json",
      "--permission-mode",
      "acceptEdits",
      "--allowedTools",
      ...ALLOWED_TOOLS,
    ], {
      cwd: dirs.ws,
      env: {
        ...process.env,
        HOME: dirs.home,
        ANTHROPIC_BASE_URL: server.url,
        ANTHROPIC_API_KEY: "test",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
      timeoutMs: TIMEOUT - 30_000,
    });
    assert.equal(r.code, 0, `claude exited ${r.code}: ${r.stderr}${r.stdout}`);
    const out = JSON.parse(r.stdout) as { permission_denials?: { tool_use_id: string }[] };
    const denied = new Set((out.permission_denials ?? []).map((d) => d.tool_use_id));
    const results = server.toolResults();
    const missing = calls.filter((c) => !results.has(`toolu_${c.id}`)).map((c) => c.id);
    assert.deepEqual(missing, [], "Claude Code answered every call of the corpus with a tool_result");
    const seen = calls.map((c): [string, Observed] => {
      const result = results.get(`toolu_${c.id}`)!;
      const o = { denied: denied.has(`toolu_${c.id}`), leaked: result.content.includes("SECRET-"), error: "" };
      if (!o.denied && result.is_error) o.error = result.content.replaceAll(dirs.ws, "$WS").slice(0, 60);
      // The observations agree: a refused call is an error result that read nothing and created nothing; a call
      // let through created what it creates.
      if (o.denied) assert.ok(result.is_error && !o.leaked, `${c.id} refused: ${result.content}`);
      if (c.marker) assert.equal(present(c.marker), !o.denied, `${c.id}: ${c.marker} exists iff the call ran`);
      return [c.id, o];
    });
    return new Map(seen);
  } finally {
    await server.close();
  }
}

/** What noema's rules decide about each call: the same rules in a rules file, asked as `noema rules test` asks. */
function noemaDenials(dirs: ReturnType<typeof box>, calls: CorpusCall[]): Map<string, boolean> {
  const file = join(dirs.ws, "noema-rules.jsonc");
  writeFileSync(file, JSON.stringify({ deny: dirs.deny, default: "allow" }, null, 2));
  const layers = [loadRulesFile(file)];
  return new Map(calls.map((c) => {
    const command = c.name === "Bash" ? String(c.input.command) : JSON.stringify(c.input);
    const verdict = rulesVerdict(layers, { kind: "tool", tool: c.name, input: c.input, command }, dirs.ws);
    return [c.id, verdict !== undefined && verdict.audit !== true];
  }));
}

const yesNo = (denied: boolean | undefined) => (denied ? "deny" : "allow");

describe("noema's rules are never looser than Claude Code's own permission engine", () => {
  test("over the corpus, every call Claude Code's deny rules refuse, noema's rules deny", {
    timeout: TIMEOUT,
  }, async () => {
    const ruled = box("ruled", true);
    const control = box("control", false);
    const calls = corpus(ruled.ws, ruled.outside);
    assert.ok(calls.length >= 60, `a corpus of at least 60 calls (${calls.length})`);
    // noema is asked first, on the workspace as laid out (what a call would reach depends on the files there).
    const noema = noemaDenials(ruled, calls);
    const [claude, bare] = await Promise.all([
      claudeRun(ruled, calls),
      claudeRun(control, corpus(control.ws, control.outside)),
    ]);
    const label = (c: CorpusCall) => labelOf(c, ruled.ws, ruled.outside);
    const rows = calls.map((c) => ({
      id: c.id,
      call: label(c),
      claude: yesNo(claude.get(c.id)!.denied),
      leaked: claude.get(c.id)!.leaked ? "SECRET" : "",
      control: yesNo(bare.get(c.id)!.denied),
      noema: yesNo(noema.get(c.id)),
      "error (let through, failed)": claude.get(c.id)!.error,
    }));
    console.log(`Claude Code vs noema, deny rules ${JSON.stringify(ruled.deny).replaceAll(ruled.outside, "$OUT")}`);
    console.table(rows);
    // Claude Code's rules were read: the plainest denied calls are refused.
    const first = calls.find((c) => c.input.command === "cat secrets/key.txt")!.id;
    assert.ok(claude.get(first)!.denied, "Claude Code applied the deny rules of its project settings");
    assert.ok(bare.get(first)!.leaked, "with no rules, the same call ran and read the secret");
    const selfRefused = rows.filter((r) => r.control === "deny");
    assert.deepEqual(selfRefused, [], "with no rules, Claude Code refuses no call of the corpus by itself");
    const stricter = rows.filter((r) => r.noema === "deny" && r.claude === "allow");
    console.log(
      `noema denies ${stricter.length} call(s) Claude Code allows:\n${
        stricter.map((r) => `  ${r.id} ${r.call}`).join("\n")
      }`,
    );
    const looser = rows.filter((r) => r.claude === "deny" && r.noema === "allow");
    assert.deepEqual(
      looser.map((r) => `${r.id} ${r.call}`),
      [],
      `Claude Code denies ${looser.length} call(s) of ${calls.length} that noema allows`,
    );
  });
});
