/**
 * "Secrets are masked in every artifact", tried the way a leak happens: each
 * kind of secret (a named env secret from the task file, one from
 * `--secret`, a GitHub token, an AWS access key, a JWT, a PEM private key
 * block, a bearer token) is planted in every input a user or a plugin
 * controls — task, tags, step inputs, adapter output, errors and fact keys,
 * policy advice, patches and a policy that throws, verification commands and
 * paths, approval note and approver, file names in the workspace, and a
 * secret cut at the 4096-byte output excerpt edge. Real episodes run (CLI:
 * run, approve, resume; the `command` adapter; the library), then every file
 * under the root is read and no secret, nor any 12-character piece of one,
 * may be found. Also: child processes, verification commands and policy
 * workers never see `NOEMA_SIGNING_KEY`, and `--secret` adds to the task
 * file's secrets.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import {
  type AdapterPlugin,
  approve,
  ArtifactSink,
  childEnv,
  envSecretNames,
  INDENT_MAX_CHARS,
  Redactor,
  resolveRunSettings,
  resume,
  run,
  runProcess,
} from "noema";
import { cli, CLI_ON_DENO, REPO, runtimeCommand } from "./helpers/cli.ts";
import { runChild } from "./helpers/child.ts";
import { foundUnder } from "./helpers/files.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-secrets-");
after(() => tmp.cleanup());

// ---- The secrets, one of each kind.
const FILE_SECRET = "fIlE-SeCrEt-Value-7Q2w9rT"; // named in the task file's `secrets`
const CLI_SECRET = "cLi-SeCrEt-Value-3Z8k4xVb"; // named with --secret
const GH = "ghp_" + "Zx9Lm2Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz9X";
const AWS = "AKIA" + "QWERTYUIOPASDFGH";
const JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJub2VtYS10ZXN0In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ";
const PEM_BODY = "MIIEpAIBAAKCAQEAq7SecretBodyLine0123456789abcdefABCDEF";
const PEM_BODY2 = "SecondBodyLineOfTheKey9876543210ZYXWVUTsrqponmlkjih";
const PEM = `-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY}\n${PEM_BODY2}\n-----END RSA PRIVATE KEY-----`;
/** The same key block on one line (for file names and shell comments). */
const PEM_LINE = `-----BEGIN PRIVATE KEY-----${PEM_BODY}-----END PRIVATE KEY-----`;
const BEARER_TOKEN = "bEaRerTok0123456789abcdefXYZ";
const BEARER = `Authorization: Bearer ${BEARER_TOKEN}`;
const SIGNING_KEY = "sIgNiNg-KeY-value-0123456789";

/** Every secret in one text, and in one line (no newline). */
const ALL = [FILE_SECRET, CLI_SECRET, GH, AWS, JWT, PEM, BEARER].join(" | ");
const ALL_LINE = [FILE_SECRET, CLI_SECRET, GH, AWS, JWT, PEM_LINE, BEARER].join(" | ");
/** One file name per kind. */
const NAMES = [FILE_SECRET, CLI_SECRET, GH, AWS, JWT, PEM_LINE, BEARER];

/** What must never be on disk: each secret, and every 12-character piece of it. */
const NEEDLES = [FILE_SECRET, CLI_SECRET, GH, AWS, JWT, PEM_BODY, PEM_BODY2, BEARER_TOKEN, SIGNING_KEY];
const PIECES = [
  ...new Set(NEEDLES.flatMap((s) => Array.from({ length: s.length - 11 }, (_, i) => s.slice(i, i + 12)))),
];

const ENV = { FILE_SECRET, CLI_SECRET, NOEMA_SIGNING_KEY: SIGNING_KEY };

/** Leaks found under `root`: file names and contents holding a secret or a piece of one. */
const leaksUnder = (root: string): string[] => foundUnder(root, PIECES);

function leaksIn(text: string): string[] {
  return PIECES.filter((p) => text.includes(p));
}

/** Files whose names are each kind of secret, in a fresh workspace. */
function workspace(name: string): string {
  const ws = join(tmp.path, name);
  mkdirSync(ws, { recursive: true });
  NAMES.forEach((n, i) => writeFileSync(join(ws, `${i}-${n}.txt`), `file ${i}\n`));
  return ws;
}

/**
 * A shell script that prints a secret, a newline and padding, so that the
 * excerpt edge (`limit` bytes from the end) cuts the secret 11 characters in.
 */
function edgeScript(stdoutSecretVar: string, stdoutLen: number, stderrSecret: string, limit: number): string {
  const pad = (len: number) => limit - (len + 1 - EDGE);
  return `printf '%s\\n' "$${stdoutSecretVar}"; head -c ${pad(stdoutLen)} /dev/zero | tr '\\0' x; ` +
    `printf '%s\\n' '${stderrSecret}' >&2; head -c ${pad(stderrSecret.length)} /dev/zero | tr '\\0' y >&2`;
}
const EDGE = 11;

const probe = join(tmp.path, "probe");
mkdirSync(probe, { recursive: true });
const lit = (x: unknown) => JSON.stringify(x);

// ---- Plugins that leak on purpose.
const adapterFile = join(tmp.path, "leaky-adapter.ts");
writeFileSync(
  adapterFile,
  `import { processActResult, runProcess } from "noema";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
export default {
  name: "leaky",
  version: "1.0",
  api: "1.0",
  create() {
    return {
      async act(request) {
        const id = request.step.id;
        if (id === "s1") {
          const env = await runProcess({ argv: ["env"], env: process.env });
          writeFileSync(join(${lit(probe)}, "adapter-child-env.txt"), env.stdout);
          const r = await runProcess({ shell: ${lit(edgeScript("CLI_SECRET", CLI_SECRET.length, GH, 4096))} });
          writeFileSync(join(request.workspace, ${lit(`new-${GH}.txt`)}), "new\\n");
          const res = processActResult(r, { timeoutMs: 60000, extra: { note: ${lit(ALL)}, [${
    lit(`key ${AWS}`)
  }]: 1 } });
          return { ...res, outcome: ${lit(ALL)}, facts: [{ key: ${lit(`fact ${ALL_LINE}`)}, value: { [${
    lit(`k ${JWT}`)
  }]: ${lit(ALL)} } }] };
        }
        if (id === "s3") return { status: "error", outcome: ${lit(ALL)}, error: { type: "Leak", message: ${
    lit(ALL)
  } } };
        return { status: "ok", outcome: "ok", output: { echo: request.action.input } };
      },
    };
  },
};
`,
);
const policyFile = (name: string, body: string) => {
  const path = join(tmp.path, `${name}.ts`);
  writeFileSync(
    path,
    `import process from "node:process";
import { writeFileSync } from "node:fs";
export default { name: ${lit(name)}, version: "1.0", advise(state) { ${body} } };
`,
  );
  return path;
};
const hintPolicy = policyFile(
  "LeakyHint",
  `writeFileSync(${lit(join(probe, "policy-env.json"))}, JSON.stringify(Object.keys(process.env)));
  return { kind: "hint", advice: ${lit(ALL)}, confidence: 0.9, risk_tags: [${lit(ALL_LINE)}], rationale: ${
    lit(ALL)
  } };`,
);
const patchPolicy = policyFile(
  "LeakyPatch",
  `if (state.step.id !== "s1") return undefined;
  return { kind: "intervention", advice: ${lit(ALL)}, confidence: 0.9, patch: { [${lit(`p ${GH}`)}]: ${lit(ALL)} } };`,
);
const throwingPolicy = policyFile("Thrower", `throw new Error(${lit(`policy failed: ${ALL}`)});`);
const approvalPolicy = policyFile(
  "AskFirst",
  `if (state.step.id !== "s2") return undefined;
  return { kind: "veto", advice: ${lit(`approve? ${ALL}`)}, confidence: 0.95, requires_approval: true };`,
);

/** Verification that carries every secret: a command, existing, missing and unexpected paths. */
const VERIFY = [
  { kind: "command_succeeds", command: `test -z "$NOEMA_SIGNING_KEY" # ${ALL_LINE}` },
  { kind: "file_exists", path: `0-${FILE_SECRET}.txt` },
  { kind: "file_exists", path: `missing-${GH}.txt` },
  { kind: "only_modified", paths: [`keep-${AWS}.txt`] },
];

describe("secrets never reach disk: CLI run, approve, resume", () => {
  const root = join(tmp.path, "root-cli");
  const ws = workspace("ws-cli");
  const task = join(tmp.path, "leaky-task.jsonc");
  writeFileSync(
    task,
    JSON.stringify({
      // A resumed run acts with the real task: only named secrets can be restored into it.
      task: `deploy with ${FILE_SECRET} and ${CLI_SECRET}`,
      using: adapterFile,
      workspace: ws,
      secrets: ["FILE_SECRET"],
      policies: [hintPolicy, patchPolicy, throwingPolicy, approvalPolicy],
      governance: "enforce",
      failure_policy: "fail_open",
      tags: { [`tag ${JWT}`]: ALL_LINE },
      steps: [
        { id: "s1", kind: "act", description: `run ${ALL}`, inputs: { command: ALL, [`in ${BEARER}`]: ALL } },
        // Steps that run after the resume hold named secrets only: a token masked by pattern cannot be restored.
        { id: "s2", kind: "act", description: "needs approval", inputs: { env: { TOKEN: CLI_SECRET } } },
        { id: "s3", kind: "act", description: "fails", inputs: { note: FILE_SECRET } },
      ],
      verify: VERIFY,
    }),
  );

  test("every file under the root is free of every secret", { timeout: 120_000 }, () => {
    const outputs: string[] = [];
    const started = cli(
      ["--root", root, "run", task, "--secret", "CLI_SECRET", "--tag", `cli-${GH}=${ALL_LINE}`, "--json"],
      { env: { ...ENV, PROBE: probe } },
    );
    assert.equal(started.code, 4, started.stderr);
    outputs.push(started.stdout);
    const id = JSON.parse(started.stdout).episode_id as string;
    const decided = cli(["--root", root, "approve", id, "--note", `ok ${ALL}`, "--by", `ana ${ALL_LINE}`], {
      env: ENV,
    });
    assert.equal(decided.code, 0, decided.stderr);
    outputs.push(decided.stdout);
    const resumed = cli(["--root", root, "resume", id, "--json"], { env: { ...ENV, PROBE: probe } });
    assert.equal(resumed.code, 1, resumed.stderr);
    outputs.push(resumed.stdout);
    const dir = join(root, "episodes", id);

    // The run really saw every input: the planted places exist (masked) in the artifacts.
    const events = readFileSync(join(dir, "events.jsonl"), "utf8");
    const approval = readdirSync(join(dir, "approvals"));
    assert.equal(approval.length, 1);
    assert.match(readFileSync(join(dir, "approvals", approval[0]), "utf8"), /"note": "ok \[REDACTED:FILE_SECRET\]/);
    assert.equal(readdirSync(join(dir, "checkpoints")).length, 1);
    assert.match(events, /"message":"policy failed: \[REDACTED:FILE_SECRET\] \| \[REDACTED:CLI_SECRET\]/);
    assert.match(events, /"fact \[REDACTED:FILE_SECRET\]/);
    const summary = JSON.parse(readFileSync(join(dir, "summary.json"), "utf8"));
    assert.equal(summary.verification.assertions.length, 4);
    assert.match(summary.verification.assertions[0].target, /\[REDACTED:CLI_SECRET\]/);
    assert.equal(summary.verification.assertions[0].passed, true, "the verification command saw no signing key");
    assert.ok(Object.keys(summary.tags).some((k) => k.startsWith("cli-[REDACTED]")), JSON.stringify(summary.tags));
    const pre = readFileSync(join(dir, "snapshots", "pre.json"), "utf8");
    assert.match(pre, /"0-\[REDACTED:FILE_SECRET\]\.txt"/);
    assert.match(pre, /"1-\[REDACTED:CLI_SECRET\]\.txt"/);

    assert.deepEqual(leaksUnder(root), []);
    assert.deepEqual(leaksIn(outputs.join("\n")), [], "what the CLI printed");
  });

  test("no child process or policy worker got NOEMA_SIGNING_KEY", () => {
    const childEnvText = readFileSync(join(probe, "adapter-child-env.txt"), "utf8");
    assert.match(childEnvText, /^PATH=/m, "the adapter's child did get an environment");
    assert.doesNotMatch(childEnvText, /NOEMA_SIGNING_KEY/);
    const policyEnv = JSON.parse(readFileSync(join(probe, "policy-env.json"), "utf8")) as string[];
    assert.ok(policyEnv.includes("PROBE"), "the policy worker did get an environment");
    assert.equal(policyEnv.includes("NOEMA_SIGNING_KEY"), false, policyEnv.join(" "));
  });
});

describe("secrets never reach disk: the command adapter", () => {
  test(
    "its environment has no signing key; a secret cut at the 8192-byte excerpt edge is masked",
    { timeout: 120_000 },
    () => {
      const root = join(tmp.path, "root-command");
      const ws = workspace("ws-command");
      const script = `${edgeScript("CLI_SECRET", CLI_SECRET.length, JWT, 8192)}; test -z "$NOEMA_SIGNING_KEY"`;
      const ok = cli(
        [
          "--root",
          root,
          "run",
          `run the agent ${ALL}`,
          "--using",
          "command",
          "--secret",
          "CLI_SECRET",
          "--secret",
          "FILE_SECRET",
          "--tag",
          `t=${ALL_LINE}`,
          "--workspace",
          ws,
          "--verify-command",
          `test -z "$NOEMA_SIGNING_KEY" # ${ALL_LINE}`,
          "--json",
          "--",
          "sh",
          "-c",
          script,
        ],
        { env: ENV },
      );
      assert.equal(ok.code, 0, ok.stderr + ok.stdout);
      const id = JSON.parse(ok.stdout).episode_id as string;
      const act = readFileSync(join(root, "episodes", id, "events.jsonl"), "utf8").split("\n").filter((l) =>
        l.includes('"phase":"act"')
      ).map((l) => JSON.parse(l)).find((e) => e.payload.output?.exit_code !== undefined);
      assert.equal(act.payload.output.exit_code, 0, "the command saw NOEMA_SIGNING_KEY");
      assert.equal(act.payload.output.stdout_bytes, 8192 + EDGE);
      assert.match(act.payload.output.stdout, /^\[REDACTED\]\nx/, "the cut secret is masked whole");
      assert.match(act.payload.output.stderr, /^\[REDACTED\]\ny/);
      assert.deepEqual(leaksUnder(root), []);
      assert.deepEqual(leaksIn(ok.stdout), []);
    },
  );
});

describe("secrets never reach disk: the library", () => {
  test("run, approve and resume with in-process plugins", { timeout: 120_000 }, async () => {
    for (const [k, v] of Object.entries(ENV)) process.env[k] = v;
    try {
      const root = join(tmp.path, "root-lib");
      const ws = workspace("ws-lib");
      const adapter: AdapterPlugin = {
        name: "leaky-lib",
        create: () => ({
          async act(request) {
            if (request.step.id === "s1") {
              const r = await runProcess({ shell: edgeScript("FILE_SECRET", FILE_SECRET.length, AWS, 4096) });
              writeFileSync(join(request.workspace!, `new-${JWT}.txt`), "x");
              return {
                status: "ok",
                outcome: ALL,
                // An in-process plugin can read the signing key; it is masked even though no one named it.
                output: { ...r, [`out ${PEM_LINE}`]: ALL, key: process.env.NOEMA_SIGNING_KEY },
                facts: [{ key: `fact ${ALL_LINE}`, value: ALL }],
              };
            }
            if (request.step.id === "s3") throw new Error(`adapter threw ${ALL}`);
            return { status: "ok", outcome: "ok" };
          },
        }),
      };
      const policies = [
        { name: "HintLib", version: "1.0", advise: () => ({ kind: "hint" as const, advice: ALL, confidence: 0.9 }) },
        {
          name: "ThrowLib",
          version: "1.0",
          advise: () => {
            throw new Error(ALL);
          },
        },
        {
          name: "AskLib",
          version: "1.0",
          advise: (s: { step: { id: string } }) =>
            s.step.id === "s2"
              ? { kind: "veto" as const, advice: ALL, confidence: 0.95, requires_approval: true }
              : undefined,
        },
      ];
      const paused = await run(`task ${FILE_SECRET} ${CLI_SECRET}`, {
        root,
        using: adapter,
        workspace: ws,
        secrets: ["FILE_SECRET", "CLI_SECRET"],
        policies,
        failure_policy: "fail_open",
        tags: { [`k ${GH}`]: ALL_LINE },
        steps: [
          { id: "s1", kind: "act", description: ALL, inputs: { [`key ${AWS}`]: ALL } },
          { id: "s2", kind: "act", description: "approve me", inputs: { x: `${FILE_SECRET} ${CLI_SECRET}` } },
          { id: "s3", kind: "act", description: "throws", inputs: {} },
        ],
        verify: VERIFY,
      });
      assert.equal(paused.status, "pending");
      const record = approve(paused.episode_id, { root, note: ALL, by: ALL_LINE });
      assert.equal(record.decision, "approved");
      const done = await resume(paused.episode_id, { root, using: adapter, policies });
      assert.equal(done.status, "error");
      const state = JSON.parse(readFileSync(join(paused.episode_dir, "state.json"), "utf8"));
      assert.equal(state.memory.facts.length, 1);
      assert.equal(state.outcomes.actions[0].output.key, "[REDACTED:NOEMA_SIGNING_KEY]");
      assert.deepEqual(leaksUnder(root), []);
    } finally {
      for (const k of Object.keys(ENV)) delete process.env[k];
    }
  });
});

describe("the pieces", () => {
  test("ArtifactSink masks keys and values of any file, a new one (model.jsonl) too", () => {
    const dir = join(tmp.path, "sink");
    mkdirSync(dir);
    const sink = new ArtifactSink(dir, new Redactor({ secrets: ["S"], env: { S: FILE_SECRET } }));
    const turn = { role: "assistant", [`tool ${GH}`]: [{ args: { token: FILE_SECRET, pem: PEM, jwt: JWT } }] };
    const written = sink.appendJsonl("model.jsonl", turn);
    assert.notEqual(written, turn, "a masked copy is returned");
    const plain = { a: "nothing here", n: [1, 2] };
    assert.equal(sink.appendJsonl("model.jsonl", plain), plain, "an unchanged value is written as is");
    sink.writeJson("notes/x.json", { [AWS]: BEARER });
    sink.close();
    const text = readFileSync(join(dir, "model.jsonl"), "utf8");
    assert.equal(text.split("\n").length, 3);
    assert.match(text, /\[REDACTED:S\]/);
    assert.deepEqual(leaksUnder(dir), []);
  });

  test("a JSON artifact is indented up to INDENT_MAX_CHARS of one-line JSON, on one line beyond, masked either way", () => {
    const dir = join(tmp.path, "sink-layout");
    mkdirSync(dir);
    const sink = new ArtifactSink(dir, new Redactor({ secrets: ["S"], env: { S: FILE_SECRET } }));
    const big = (chars: number) => ({ key: FILE_SECRET, pad: "x".repeat(chars - 19 - FILE_SECRET.length) });
    const at = big(INDENT_MAX_CHARS), over = big(INDENT_MAX_CHARS + 1);
    assert.equal(JSON.stringify(at).length, INDENT_MAX_CHARS, "the value's one-line form");
    sink.writeJson("small.json", { a: [1], b: FILE_SECRET });
    sink.writeJson("at.json", at);
    sink.writeJson("over.json", over);
    sink.close();
    const small = readFileSync(join(dir, "small.json"), "utf8");
    assert.equal(small, '{\n  "a": [\n    1\n  ],\n  "b": "[REDACTED:S]"\n}\n');
    const atText = readFileSync(join(dir, "at.json"), "utf8");
    assert.equal(atText.split("\n").length, 5, "indented: one member per line");
    const overText = readFileSync(join(dir, "over.json"), "utf8");
    assert.equal(overText.split("\n").length, 2, "one line and the final newline");
    assert.equal(JSON.parse(overText).key, "[REDACTED:S]");
    assert.equal(JSON.parse(overText).pad, over.pad);
    assert.deepEqual(leaksUnder(dir), []);
  });

  test("a value with a shared list is written as JSON.stringify writes it, masked in the list and around it", () => {
    const dir = join(tmp.path, "sink-shared");
    mkdirSync(dir);
    const sink = new ArtifactSink(dir, new Redactor({ secrets: ["S"], env: { S: FILE_SECRET } }));
    // Past INDENT_MAX_CHARS, on one line: the action records' texts are made once and reused.
    const records = Array.from({ length: 6000 }, (_, i) => Object.freeze({ id: `act_${i}`, output: "y".repeat(200) }));
    const state = { version: "1.0", outcomes: { status: "ok", actions: records, error: null }, links: { a: "b" } };
    const plain = JSON.stringify(state);
    assert.ok(plain.length > INDENT_MAX_CHARS);
    for (let i = 0; i < 2; i++) {
      sink.writeJson("state.json", state, { shared: records });
      assert.equal(readFileSync(join(dir, "state.json"), "utf8"), plain + "\n", `write ${i + 1}`);
    }
    // The projection event holds a slice: the same records, already written.
    const event = { id: "e1", payload: { outcomes: { ...state.outcomes, actions: records.slice(10) } } };
    const line = sink.serialize(event, 0, event.payload.outcomes.actions).text;
    assert.equal(line, JSON.stringify(event));
    // A secret around the list, or in a record, is masked as without the option.
    const secretAround = { ...state, task: `uses ${FILE_SECRET}` };
    const around = sink.serialize(secretAround, 2, records).text;
    assert.equal(around, sink.serialize(secretAround, 2).text);
    assert.ok(!around.includes(FILE_SECRET) && around.includes("[REDACTED:S]"));
    const leaky = [...records, Object.freeze({ id: "act_x", output: GH })];
    const secretIn = { ...state, outcomes: { ...state.outcomes, actions: leaky } };
    const inside = sink.serialize(secretIn, 2, leaky).text;
    assert.equal(inside, sink.serialize(secretIn, 2).text);
    assert.ok(!inside.includes(GH) && inside.includes("[REDACTED]"));
    // Small enough to be indented: indented as before; a list not in the value: as before.
    const small = { outcomes: { actions: records.slice(0, 2) } };
    assert.equal(sink.serialize(small, 2, small.outcomes.actions).text, JSON.stringify(small, null, 2));
    assert.equal(sink.serialize(state, 0, [records[0]]).text, plain);
    sink.close();
    assert.deepEqual(leaksUnder(dir), []);
  });

  test("a masking JSONL appender masks a line given as JSON text, as the model log writes it", () => {
    const dir = join(tmp.path, "sink-text");
    mkdirSync(dir);
    const sink = new ArtifactSink(dir, new Redactor({ secrets: ["S"], env: { S: FILE_SECRET } }));
    const log = sink.jsonl("model.jsonl");
    log.appendRaw(JSON.stringify({ prompt: [{ text: `use ${FILE_SECRET}` }], tool: GH, n: 1 }));
    log.appendRaw('{"plain":"nothing here"}');
    log.close();
    sink.close(); // the sink stops declaring its secrets
    const lines = readFileSync(join(dir, "model.jsonl"), "utf8").trim().split("\n");
    assert.equal(lines.length, 2);
    assert.equal(JSON.parse(lines[0]).prompt[0].text, "use [REDACTED:S]");
    assert.equal(JSON.parse(lines[0]).n, 1);
    assert.equal(lines[1], '{"plain":"nothing here"}', "a clean line is written as given");
    assert.deepEqual(leaksUnder(dir), []);
  });

  test("runProcess masks an excerpt before cutting it, with the secrets of the open episodes", async () => {
    const sink = new ArtifactSink(tmp.path, new Redactor({ secrets: ["S"], env: { S: FILE_SECRET } }));
    try {
      const r = await runProcess({
        shell: edgeScript("FILE_SECRET", FILE_SECRET.length, GH, 4096),
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", FILE_SECRET },
      });
      assert.equal(r.stdout_bytes, 4096 + EDGE);
      assert.ok(r.stdout.startsWith("[REDACTED]\nx"), r.stdout.slice(0, 40));
      assert.ok(r.stderr.startsWith("[REDACTED]\ny"), r.stderr.slice(0, 40));
      assert.ok(Buffer.byteLength(r.stdout) <= 4096);
      assert.deepEqual(leaksIn(r.stdout + r.stderr), []);
    } finally {
      sink.close();
    }
    // Without the episode open, the named value is not known: its cut tail shows (patterns still apply).
    const r2 = await runProcess({
      shell: edgeScript("FILE_SECRET", FILE_SECRET.length, GH, 4096),
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", FILE_SECRET },
    });
    assert.ok(r2.stdout.startsWith(FILE_SECRET.slice(EDGE)), r2.stdout.slice(0, 40));
  });

  test("childEnv drops noema's own secrets and keeps the rest", () => {
    const env = childEnv({
      PATH: "/bin",
      NOEMA_SIGNING_KEY: "k",
      NOEMA_EXTRA_TOKEN: "t",
      NOEMA_SIGNING_KID: "kid",
      NOEMA_EPISODE_ID: "ep",
      API_TOKEN: "user's own",
    });
    assert.deepEqual(env, { PATH: "/bin", NOEMA_SIGNING_KID: "kid", NOEMA_EPISODE_ID: "ep", API_TOKEN: "user's own" });
    // A store URL with a password, in its authority or in a query parameter named like one (a TLS key's passphrase).
    const urls = childEnv({
      NOEMA_STORE: "postgres://u@db/x?sslmode=verify-full&sslpassword=hunter2",
      NOEMA_OTHER: "postgres://u:pw@db/x",
      NOEMA_PLAIN: "postgres://u@db/x?sslmode=require&sslrootcert=/etc/ca.pem",
    });
    assert.deepEqual(urls, { NOEMA_PLAIN: "postgres://u@db/x?sslmode=require&sslrootcert=/etc/ca.pem" });
  });

  test("--secret adds to the secrets of the task file and noema.jsonc", () => {
    const cwd = join(tmp.path, "merge");
    mkdirSync(cwd);
    writeFileSync(join(cwd, "noema.jsonc"), JSON.stringify({ secrets: ["FROM_CONFIG"] }));
    writeFileSync(join(cwd, "t.jsonc"), JSON.stringify({ task: "x", secrets: ["FROM_FILE", "BOTH"] }));
    const { options } = resolveRunSettings({
      taskOrFile: join(cwd, "t.jsonc"),
      options: { secrets: ["FROM_FLAG", "BOTH"] },
      cwd,
    });
    assert.deepEqual(options.secrets, ["FROM_CONFIG", "FROM_FILE", "BOTH", "FROM_FLAG"]);
  });

  test("redact: a clean value comes back as the same object; a secret anywhere (deep, in a key) is masked", () => {
    const r = new Redactor({ secrets: ["FILE_SECRET"], env: { FILE_SECRET } });
    const clean = { a: [1, { b: "plain", c: null }], d: { "key with spaces": true } };
    const out = r.redact(clean);
    assert.equal(out.value, clean, "nothing copied");
    assert.equal(out.report.applied, false);
    assert.deepEqual(r.unmask(clean), { value: clean, unresolved: [] }, "no mask: nothing to put back, nothing copied");
    process.env.FILE_SECRET_T = FILE_SECRET;
    try {
      const named = new Redactor({ secrets: ["FILE_SECRET_T"] });
      const masked = named.redact({ deep: [{ s: `a ${FILE_SECRET}` }] }).value;
      assert.deepEqual(named.unmask(masked).value, { deep: [{ s: `a ${FILE_SECRET}` }] });
    } finally {
      delete process.env.FILE_SECRET_T;
    }
    for (const hidden of [GH, AWS, JWT, BEARER, FILE_SECRET]) {
      const inValue = r.redact({ a: [1, { b: `x ${hidden} y` }], d: 2 }, "payload");
      assert.deepEqual(leaksIn(JSON.stringify(inValue.value)), [], hidden.slice(0, 12));
      assert.deepEqual(inValue.report.fields, ["payload.a[1].b"]);
      const inKey = r.redact({ deep: { [`k ${hidden}`]: 1 } });
      assert.deepEqual(leaksIn(JSON.stringify(inKey.value)), [], hidden.slice(0, 12));
      assert.equal(inKey.report.applied, true);
    }
  });

  test("each token kind is masked on its own", () => {
    const r = new Redactor();
    for (const t of [GH, AWS, JWT, PEM, PEM_LINE, BEARER, `${PEM.slice(0, 60)}`]) {
      const out = r.redactString(`before ${t} after`);
      assert.deepEqual(leaksIn(out), [], `${t.slice(0, 20)}… → ${out}`);
    }
  });
});

describe("no noema secret reaches any child (read from /proc/<pid>/environ)", () => {
  const KEY = "cHiLd-SiGnInG-KeY-0123456789";
  const STORE_PASSWORD = "StOrE-PaSsWoRd-42x";
  const SERVE_TOKEN = "sErVe-ToKeN-0123456789abc";
  const SECRET_ENV = {
    NOEMA_SIGNING_KEY: KEY,
    NOEMA_STORE: `postgres://noema:${STORE_PASSWORD}@127.0.0.1:5432/runs`,
    NOEMA_SERVE_TOKEN: SERVE_TOKEN,
    NOEMA_DB_PASSWORD: STORE_PASSWORD + "-2",
    KEY_COPY: KEY, // the key under another name
    USER_TOKEN: "user-declared-secret-value", // the user's own secret: the child acts with it
  };
  const dir = join(tmp.path, "child-env");
  mkdirSync(dir, { recursive: true });
  /** A program that copies its own /proc/<pid>/environ to `<dir>/<name>.env`, then runs `then`. */
  const dumper = (name: string, then = "") => {
    const path = join(dir, `${name}.sh`);
    writeFileSync(path, `#!/bin/sh\ncat /proc/$$/environ > '${join(dir, `${name}.env`)}'\n${then}\n`, {
      mode: 0o755,
    });
    return path;
  };
  /** The child's environment as written by the dumper (NUL-separated NAME=value entries). */
  const seen = (name: string) => readFileSync(join(dir, `${name}.env`), "utf8").split("\0").filter(Boolean);
  const env = { ...SECRET_ENV };
  const ws = join(dir, "ws");
  mkdirSync(ws, { recursive: true });

  const KINDS: { kind: string; start: () => Promise<unknown> | unknown }[] = [
    {
      kind: "command",
      start: () =>
        cli(["run", "x", "--root", join(dir, "r1"), "-q", "--using", "command", "--", dumper("command")], { env }),
    },
    {
      kind: "shell",
      start: () => {
        // Even when the adapter's allow-list names them.
        const task = join(dir, "shell-task.json");
        const allow = ["PATH", ...Object.keys(SECRET_ENV)];
        writeFileSync(task, JSON.stringify({ task: "x", using: "shell", adapter: { env_allow: allow } }));
        return cli(["run", task, "--root", join(dir, "r2"), "-q", "--", dumper("shell")], { env });
      },
    },
    {
      kind: "verify",
      start: () =>
        cli(["run", "x", "--root", join(dir, "r3"), "-q", "--workspace", ws, "--verify-command", dumper("verify")], {
          env,
        }),
    },
    {
      kind: "claude",
      start: () =>
        cli(["run", "x", "--root", join(dir, "r4"), "-q", "--workspace", ws, "--using", "claude-code"], {
          env: {
            ...env,
            NOEMA_CLAUDE_BIN: dumper("claude", `echo '{"result":"done","terminal_reason":"completed"}'`),
          },
        }),
    },
    {
      kind: "mcp",
      start: async () => {
        // In a process of its own with the secrets in its environment, as noema's would be. Not by setting them in
        // this process: Deno runs test files in one process, and another file's noema would read them there.
        const script = join(dir, "mcp-client.ts");
        writeFileSync(join(dir, "mcp-env.json"), JSON.stringify(env));
        writeFileSync(
          script,
          `import { readFileSync } from "node:fs";\n` +
            `import { connectMcpServers } from ${JSON.stringify(join(REPO, "src", "llm", "mcp.ts"))};\n` +
            `const env = JSON.parse(readFileSync(${JSON.stringify(join(dir, "mcp-env.json"))}, "utf8"));\n` +
            // The server dumps its environment and exits: the connection fails, after the child started.
            `await connectMcpServers({ s: { command: ${JSON.stringify(dumper("mcp"))}, env } })` +
            `.then((c) => c.close(), () => {});\n`,
        );
        const [cmd, ...args] = runtimeCommand();
        const r = await runChild(cmd, [...args, script], {
          cwd: REPO,
          env: { ...process.env, ...env },
          timeoutMs: 60_000,
        });
        assert.equal(r.code, 0, r.stderr);
      },
    },
  ];

  for (const k of KINDS) {
    test(`${k.kind}: no signing key, store password, serve token or copy of them`, async () => {
      await k.start();
      const vars = seen(k.kind);
      assert.ok(vars.some((v) => v.startsWith("PATH=")), `${k.kind} got an environment`);
      const text = vars.join("\n");
      for (const secret of [KEY, STORE_PASSWORD, SERVE_TOKEN]) {
        assert.equal(text.includes(secret), false, `${k.kind} got ${secret}:\n${text}`);
      }
      // The MCP SDK passes a safe few variables and those configured.
      if (k.kind !== "mcp") assert.ok(vars.includes(`USER_TOKEN=${SECRET_ENV.USER_TOKEN}`), "the user's own kept");
    });
  }

  test(
    "a resident hook server, started by the hook Claude Code runs under run --using claude-code: the same",
    // Hook servers run under Bun only (elsewhere each hook call is its own process, a child of claude).
    { skip: "Deno" in globalThis, timeout: 60_000 },
    () => {
      const fixture = readFileSync(join(import.meta.dirname!, "fixtures", "claude", "PreToolUse_Bash.json"), "utf8");
      const claude = join(dir, "fake-claude.mjs");
      // A stand-in for claude: runs the registered PreToolUse hook once, then finds the server that hook started
      // (the process whose environment names this run's server directory) and copies its /proc/<pid>/environ.
      writeFileSync(
        claude,
        `#!${process.execPath}
import { execSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
const args = process.argv.slice(2);
const settings = JSON.parse(args[args.indexOf("--settings") + 1]);
const event = { ...${fixture.trim()}, session_id: args[args.indexOf("--session-id") + 1], cwd: process.cwd() };
execSync(settings.hooks.PreToolUse[0].hooks[0].command, { input: JSON.stringify(event), stdio: ["pipe", "ignore", "inherit"] });
const mark = "NOEMA_HOOK_SERVE=" + process.env.NOEMA_HOOK_SERVER_DIR;
let found = "";
for (const until = Date.now() + 20000; found === "" && Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
  for (const pid of readdirSync("/proc").filter((n) => /^[0-9]+$/.test(n))) {
    try {
      const env = readFileSync("/proc/" + pid + "/environ", "utf8");
      if (env.includes(mark)) found = env;
    } catch {}
  }
}
writeFileSync(${JSON.stringify(join(dir, "hook-server.env"))}, found);
console.log(JSON.stringify({ result: "done", terminal_reason: "completed" }));
`,
        { mode: 0o755 },
      );
      const r = cli(["run", "x", "--root", join(dir, "r6"), "-q", "--workspace", ws, "--using", "claude-code"], {
        env: { ...env, NOEMA_CLAUDE_BIN: claude, NOEMA_HOOK_SERVER: undefined },
      });
      assert.equal(r.code, 0, r.stderr);
      const text = seen("hook-server").join("\n");
      assert.match(text, /^NOEMA_HOOK_SERVE=/m, "the hook started a resident server");
      for (const secret of [KEY, STORE_PASSWORD, SERVE_TOKEN]) assert.equal(text.includes(secret), false, text);
    },
  );

  test("a policy worker: the same", () => {
    const policy = join(dir, "policy.ts");
    writeFileSync(
      policy,
      `import process from "node:process";\nimport { writeFileSync } from "node:fs";\n` +
        `export default { name: "EnvProbe", version: "1.0", advise() { writeFileSync(${
          JSON.stringify(join(dir, "policy.env"))
        }, Object.entries(process.env).map(([k, v]) => k + "=" + v).join("\\0"));\n` +
        // Under Bun, a process the policy starts with Bun.spawnSync (which, in a worker, would get the process's
        // own environment unless given one) sees no secret either.
        `  const B = (globalThis as any).Bun; if (B) writeFileSync(${
          JSON.stringify(join(dir, "policy-child.env"))
        }, B.spawnSync(["env", "-0"]).stdout.toString()); } };\n`,
    );
    const r = cli(["run", "x", "--root", join(dir, "r5"), "-q", "--policy", policy], { env });
    assert.equal(r.code, 0, r.stderr);
    const text = seen("policy").join("\n");
    assert.match(text, /^PATH=/m);
    for (const secret of [KEY, STORE_PASSWORD, SERVE_TOKEN]) assert.equal(text.includes(secret), false, text);
    if (!CLI_ON_DENO) {
      const child = seen("policy-child").join("\n");
      assert.match(child, /^PATH=/m);
      for (const secret of [KEY, STORE_PASSWORD, SERVE_TOKEN]) assert.equal(child.includes(secret), false, child);
    }
  });
});

describe("secrets in the environment are masked without being named (by their names, and token shapes)", () => {
  /** Values no token pattern knows: only the variable's name says they are secret. */
  const UNNAMED = {
    MYSECRET: "plain-value-of-mysecret",
    GITHUB_TOKEN: "gh-value-not-a-known-shape-1",
    AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG/bPxRfiCY",
    STRIPE_API_KEY: "stripe-value-0123456",
    DB_PASSWORD: "db-pass-987654",
    LDAP_PASSWD: "ldap-pw-123456",
    GCP_CREDENTIALS: "gcp-credential-blob-x",
    DEPLOY_PRIVATE_KEY: "deploy-private-key-body",
    SIGNING_KEY: "eight-or-more-chars",
  };
  /** Token shapes, in the output only. */
  const SHAPES = {
    "sk-ant-": "sk-ant-" + "api03-abcdefghijklmnopqrstuvwx",
    "sk-": "sk-" + "proj-abcdefghijklmnopqrstuvwxyz0123",
    "github_pat_": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
    "xoxe-": "xoxe-" + "1-abcdefghijklmnop",
    url: "S3cr3tUrlPw",
  };
  /** Values that stay: too short for `_KEY`, a boolean, a number, an opted-out name. */
  const KEPT = {
    SHORT_KEY: "abc1234",
    TOKENIZERS_PARALLELISM: "false",
    MAX_TOKENS_LIMIT: "4096000",
    OPTED_TOKEN: "opted-out-token-value",
    FILE_OPTED_SECRET: "file-opted-secret-value",
  };
  const base = join(tmp.path, "env-names");
  mkdirSync(base, { recursive: true });

  test("a command printing env and token shapes: no value reaches state.json or events.jsonl; opt-outs stay", () => {
    const root = join(base, "root");
    const task = join(base, "task.jsonc");
    // Opting out in the task file ("!NAME" in secrets) and with --not-secret.
    writeFileSync(task, JSON.stringify({ task: "print env", using: "command", secrets: ["!FILE_OPTED_SECRET"] }));
    const script = `env; echo ${Object.values(SHAPES).slice(0, 4).join(" ")}; echo postgres://app:${SHAPES.url}@db/x`;
    const r = cli(["run", task, "--root", root, "--not-secret", "OPTED_TOKEN", "--json", "--", "sh", "-c", script], {
      env: { ...UNNAMED, ...KEPT },
    });
    assert.equal(r.code, 0, r.stderr);
    const dir = JSON.parse(r.stdout).episode_dir as string;
    const written = ["state.json", "events.jsonl"].map((f) => readFileSync(join(dir, f), "utf8")).join("\n");
    assert.match(written, /MYSECRET=\[REDACTED:MYSECRET\]/, "the command's output was recorded");
    for (const [name, value] of Object.entries(UNNAMED)) {
      assert.equal(written.includes(value), false, `${name}'s value reached disk`);
      assert.match(written, new RegExp(`${name}=\\[REDACTED:${name}\\]`));
    }
    for (const [shape, value] of Object.entries(SHAPES)) {
      assert.equal(written.includes(value), false, `the ${shape} token reached disk`);
    }
    assert.match(written, /postgres:\/\/app:\[REDACTED\]@db\/x/, "the rest of the URL stays readable");
    for (const [name, value] of Object.entries(KEPT)) assert.ok(written.includes(`${name}=${value}`), name);
    assert.deepEqual(foundUnder(root, [...Object.values(UNNAMED), ...Object.values(SHAPES)]), []);
  });

  test("envSecretNames: the name rules, the length floors, plain values and opt-outs", () => {
    const env = { ...UNNAMED, ...KEPT, HOME: "/home/ana", PATH: "/bin", EMPTY_TOKEN: "" };
    assert.deepEqual(envSecretNames(env, ["OPTED_TOKEN", "FILE_OPTED_SECRET"]).sort(), Object.keys(UNNAMED).sort());
    assert.deepEqual(envSecretNames({ A_KEY: "1234567" }), [], "_KEY needs 8 characters");
    assert.deepEqual(envSecretNames({ A_KEY: "12345678x" }), ["A_KEY"]);
    assert.deepEqual(envSecretNames({ SOME_TOKEN: "abcde" }), [], "shorter than 6");
    const r = new Redactor({ env: { X_TOKEN: "tok-value-1" }, secrets: ["!X_TOKEN"] });
    assert.equal(r.redactString("tok-value-1"), "tok-value-1", "opted out");
    const both = new Redactor({ env: { X_TOKEN: "tok-value-1" }, secrets: ["!X_TOKEN", "X_TOKEN"] });
    assert.equal(both.redactString("tok-value-1"), "[REDACTED:X_TOKEN]", "named plainly too: masked");
  });

  test("a secret whose value is a word of the artifacts: not masked when detected, refused when named", () => {
    // SESSION_TOKEN=verify once masked the step kind "verify", the outcome "success…" and the key metrics.success:
    // the run ended 0 and its own artifacts failed validation.
    const task = join(base, "words.json");
    writeFileSync(
      task,
      JSON.stringify({
        task: "words",
        using: "shell",
        steps: [
          { kind: "detect", description: "a", inputs: { command: "echo a" } },
          { kind: "verify", description: "b", inputs: { command: "echo b" } },
        ],
      }),
    );
    for (const value of ["verify", "success", "direction", "pending", "noema"]) {
      const root = join(base, `words-${value}`);
      const r = cli(["run", task, "--root", root, "--json"], { env: { SESSION_TOKEN: value } });
      assert.equal(r.code, 0, r.stderr);
      const dir = JSON.parse(r.stdout).episode_dir as string;
      assert.doesNotMatch(readFileSync(join(dir, "state.json"), "utf8"), /REDACTED:SESSION_TOKEN/, value);
      const v = cli(["validate", dir, "--json"]);
      assert.equal(v.code, 0, `${value}: ${v.stdout}${v.stderr}`);
    }
    assert.deepEqual(envSecretNames({ SESSION_TOKEN: "verify", API_TOKEN: "succes" }), []);
    assert.deepEqual(new Redactor({ env: { DB_PASS: "done" }, secrets: ["DB_PASS"] }).unmaskable, [
      { name: "DB_PASS", word: "done" },
    ]);
    const root = join(base, "words-named");
    const named = cli(["run", task, "--root", root, "--secret", "DB_PASS"], { env: { DB_PASS: "verify" } });
    assert.equal(named.code, 2, named.stderr);
    assert.match(named.stderr, /DB_PASS: its value occurs in "verify", a word of the artifacts' own structure/);
    assert.ok(!existsSync(join(root, "episodes")) || readdirSync(join(root, "episodes")).length === 0);
  });

  test("token shapes: each new kind masked on its own; a URL keeps all but its password", () => {
    const r = new Redactor({ env: {} });
    for (const t of [...Object.values(SHAPES).slice(0, 4), GH, AWS, JWT, PEM_LINE]) {
      assert.equal(r.mightContain(JSON.stringify({ t: `a ${t} b` })), true, t);
    }
    for (const t of Object.values(SHAPES).slice(0, 4)) {
      assert.equal(r.redactString(`a ${t} b`), `a [REDACTED] b`, t);
    }
    assert.equal(r.redactString("mysql://root:pw0rd@127.0.0.1:3306/db"), "mysql://root:[REDACTED]@127.0.0.1:3306/db");
    // An HTTP auth scheme is case-insensitive: `curl -H "authorization: bearer …"` is masked as `Bearer …` is.
    for (const scheme of ["Bearer", "bearer", "BEARER", "bEaReR"]) {
      const header = `authorization: ${scheme} bearerTokValue9876543210`;
      assert.equal(r.redactString(header), "authorization: [REDACTED]", scheme);
      assert.equal(r.mightContain(JSON.stringify({ h: header })), true, scheme);
    }
    assert.equal(r.redactString("https://example.com:8080/a@b"), "https://example.com:8080/a@b");
    assert.deepEqual(r.spans("x postgres://u:pass@h"), [[15, 19]]);
    assert.equal(r.mightContain(JSON.stringify({ u: "https://u:p@h" })), true);
    assert.equal(r.mightContain(JSON.stringify({ u: "https://h/x" })), false);
  });
});

describe("an episode id that looks like a secret", () => {
  for (
    const c of [
      { name: "a token's shape", id: "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij", env: {} },
      { name: "a detected secret's value", id: "ep-sekr1t-value-xyz", env: { MY_API_TOKEN: "sekr1t-value-xyz" } },
    ]
  ) {
    test(`${c.name}: a usage error (exit 2) naming the field, nothing written`, () => {
      const root = join(tmp.path, `secret-id-${c.id.slice(0, 4)}`);
      const r = cli(["run", "echo hi", "--root", root, "--episode-id", c.id, "--json"], { env: c.env });
      assert.equal(r.code, 2, r.stderr + r.stdout);
      assert.match(r.stderr, /^noema: episode_id: invalid episode id: it looks like a secret/);
      assert.equal(existsSync(root), false, "nothing written: the id never reaches the disk");
    });
  }
});
