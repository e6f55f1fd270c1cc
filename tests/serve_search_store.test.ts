// deno-lint-ignore-file no-explicit-any -- tests read answers as loose JSON
/**
 * Search over a shared store (a real PostgreSQL 15, skipped saying why when it
 * is not installed, and a files store): runs published by another machine
 * (another root, another host) are searched in their tool inputs, outputs and
 * policies' reasons, not only their tasks, by `noema serve --store`'s
 * `/api/search` and by the store's own `searchEvents`: a hit names the field,
 * step, tool and host; text found only in a key is no hit; a run of another
 * project is not found; a hostile query (`%`, `_`, `\`, quotes, 200
 * characters) is literal.
 *
 * @module
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { openSharedStore } from "../src/shared_store/open.ts";
import { ProjectScopedStore } from "../src/shared_store/project_scope.ts";
import type { SharedStore } from "../src/shared_store/shared_store.ts";
import { cli } from "./helpers/cli.ts";
import { type PgServer, pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { type Served, startServe } from "./helpers/serve.ts";
import { tempDir } from "./helpers/tmp.ts";
import { row } from "./helpers/store_rows.ts";

const skipPg = pgUnavailable() ?? false;
let pg: PgServer | undefined;
const tmp = tempDir();
after(() => tmp.cleanup()); // the PostgreSQL server is shared by the test process (its watchdog removes it)

/** Only in the alpha run's tool output (its input says `$((6*7))`). */
const OUT_ONLY = "out-42-KESTREL";
/** Only in the beta run's tool output. */
const BETA = "beta-42-osprey";
const TRICKY = `50%_off "quoted" back\\slash Grüße`;

const backends = [
  { name: "PostgreSQL", skip: skipPg, fresh: () => pg!.createDatabase() },
  { name: "files", skip: false, fresh: () => pathToFileURL(join(tmp.path, "share")).href },
];

/** Runs `noema run … --using shell -- sh -c SCRIPT` on machine A (host-a) under a project; returns the episode id. */
function runOnA(root: string, url: string, project: string, task: string, script: string): string {
  const env = { NOEMA_STORE: url, NOEMA_HOST: "host-a", NOEMA_PROJECT: project };
  const r = cli(["--root", root, "run", task, "--using", "shell", "--json", "--", "sh", "-c", script], {
    env,
    cwd: tmp.path,
    timeoutMs: 120_000,
  });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(cli(["--root", root, "sync"], { env, cwd: tmp.path, timeoutMs: 120_000 }).code, 0);
  return JSON.parse(r.stdout.trim().split("\n").at(-1)!).episode_id as string;
}

for (const b of backends) {
  describe(`search over a ${b.name} store`, { skip: b.skip }, () => {
    let url: string, alpha: string, beta: string, served: Served, store: SharedStore;
    const machineA = join(tmp.path, `a-${b.name}`), consoleRoot = join(tmp.path, `console-${b.name}`);

    before(async () => {
      if (b.name === "PostgreSQL" && !pg) pg = await startPostgres();
      url = b.fresh();
      assert.equal(cli(["store", "init", "--store", url]).code, 0);
      alpha = runOnA(
        machineA,
        url,
        "alpha",
        "alpha job",
        `echo OUT-$((6*7))-kestrel; printf '%s\\n' '${TRICKY}'`,
      );
      beta = runOnA(machineA, url, "beta", "beta job", "echo BETA-$((6*7))-OSPREY");
      served = await startServe(consoleRoot, { args: ["--store", url, "--project", "alpha"] });
      store = await openSharedStore(url);
    });
    after(async () => {
      await served?.stop();
      await store?.close();
    });

    const search = async (q: string) => {
      const r = await fetch(new URL(`/api/search?q=${encodeURIComponent(q)}`, served.url));
      assert.equal(r.status, 200, q);
      return await r.json() as any;
    };

    test("a tool output of a run another machine published is found, naming its field, step, tool and host", async () => {
      const got = await search(OUT_ONLY);
      assert.deepEqual(Object.keys(got).sort(), ["hits", "query", "scanned", "total", "truncated"]);
      assert.deepEqual(
        got.hits.map((h: any) => [h.episode_id, h.field, h.step_id, h.source, h.host, h.match]),
        [[alpha, "output", "step-2", "adapter:shell", "host-a", "OUT-42-kestrel"]],
      );
      assert.equal(got.truncated, false);
      const page = await (await fetch(new URL(`/search?q=${OUT_ONLY}`, served.url))).text();
      assert.match(page, /<mark>OUT-42-kestrel<\/mark>/);
      assert.match(page, new RegExp(`href="/episodes/${alpha}"`));
      // The store's own search says which line it is.
      const direct = await store.searchEvents(OUT_ONLY);
      assert.equal(direct.hits.length, 1);
      const [line] = await store.readLines(alpha, "events.jsonl", direct.hits[0].seq, 1);
      assert.match(new TextDecoder().decode(line), /"phase":"act".*OUT-42-kestrel/);
    });

    test("the task, once; text only in a key or an id is no hit", async () => {
      const task = (await search("ALPHA JOB")).hits;
      assert.deepEqual(task.map((h: any) => [h.episode_id, h.field, h.source]), [[alpha, "task", "host-a"]]);
      assert.deepEqual((await search("stdout_bytes")).hits, [], "a key of the output");
      assert.deepEqual((await search("action_candidate_id")).hits, [], "a key of every act event");
      assert.deepEqual((await search(alpha.slice(3))).hits, [], "the episode id, in every line");
    });

    test("a run of another project is not found (the store finds it fleet-wide)", async () => {
      assert.deepEqual((await search(BETA)).hits, []);
      assert.deepEqual((await search("%")).hits.map((h: any) => h.episode_id).filter((id: string) => id === beta), []);
      const all = await store.searchEvents(BETA);
      assert.deepEqual(all.hits.map((h) => [h.episode_id, h.field]), [[beta, "output"]]);
      assert.deepEqual((await new ProjectScopedStore(store, "alpha").searchEvents(BETA)).hits, []);
    });

    test("a hostile query is literal: %, _, backslash, quotes, 200 characters", async () => {
      const places = async (q: string) =>
        (await search(q)).hits.map((h: any) => `${h.episode_id === alpha ? "alpha" : h.episode_id}:${h.field}`)
          .sort();
      assert.deepEqual(await places(TRICKY), ["alpha:input", "alpha:output"]);
      assert.deepEqual(await places(`"quoted" back\\slash`), ["alpha:input", "alpha:output"]);
      assert.deepEqual(await places("grüße"), ["alpha:input", "alpha:output"]);
      assert.deepEqual(await places("50%_off"), ["alpha:input", "alpha:output"]);
      assert.deepEqual(await places("%"), ["alpha:input", "alpha:output"], "no three letters: the bounded scan");
      assert.deepEqual(await places("5%off"), [], "% is no wildcard");
      assert.deepEqual(await places("50_%"), [], "_ is no wildcard");
      assert.deepEqual(await places("50%_%"), []);
      assert.deepEqual(await places(`back\\\\slash`), [], "two backslashes are two");
      assert.deepEqual(await places(`back\\`), ["alpha:input", "alpha:output"]);
      assert.deepEqual(await places(`'quoted'`), []);
      const long = `%_\\"'`.repeat(40);
      assert.equal(long.length, 200);
      const got = await search(long);
      assert.deepEqual(got.hits, []);
    });
  });
}

/** An act event line whose output holds `text`. */
function actLine(id: string, step: number, text: string): Uint8Array {
  const payload = {
    step_id: `step-${step}`,
    tool: "adapter:shell",
    input: { argv: ["true"] },
    output: { stdout: text },
  };
  return new TextEncoder().encode(JSON.stringify({ id: `ev_${id}_${step}`, episode_id: id, phase: "act", payload }));
}

for (const b of backends) {
  describe(`a common string in a ${b.name} store`, { skip: b.skip }, () => {
    test("found in more lines than the search reads: the newest runs' hits, newest first, and it says it stopped early", async () => {
      if (b.name === "PostgreSQL" && !pg) pg = await startPostgres();
      const store = await openSharedStore(
        b.name === "PostgreSQL" ? b.fresh() : pathToFileURL(join(tmp.path, "common")).href,
      );
      try {
        await store.migrate();
        // 120 runs of 6 lines each holding it: 720 lines, more than the PostgreSQL index path reads (500).
        const ids = Array.from({ length: 120 }, (_, i) => `ep_common_${String(i).padStart(3, "0")}`);
        for (const id of ids) {
          await store.upsertCatalog(row(id, { host: "host-c" }));
          await store.appendLines(
            id,
            "events.jsonl",
            1,
            [1, 2, 3, 4, 5, 6].map((n) => actLine(id, n, `a common-needle ${n}`)),
          );
        }
        const got = await store.searchEvents("COMMON-NEEDLE");
        assert.equal(got.truncated, true);
        assert.equal(got.hits.length, 200);
        const runs = [...new Set(got.hits.map((h) => h.episode_id))];
        assert.deepEqual(runs, ids.slice(-40).reverse(), "the newest 40 runs, 5 hits each, newest first");
        assert.deepEqual(
          got.hits.slice(0, 5).map((h) => [h.seq, h.step_id, h.field, h.host]),
          [1, 2, 3, 4, 5].map((n) => [n, `step-${n}`, "output", "host-c"]),
        );
        const few = await store.searchEvents("common-needle 6", { limit: 1000 });
        assert.equal(few.hits.length, 120, "every run, when it is rare enough to read every line");
        // A line that is not UTF-8 (Latin-1 bytes) is stored as it is, indexed, and searched.
        const latin1 = Uint8Array.from([
          ...new TextEncoder().encode('{"phase":"act","payload":{"step_id":"s1","tool":"t","output":"caf'),
          0xe9,
          ...new TextEncoder().encode(' zebra-latin1"}}'),
        ]);
        await store.upsertCatalog(row("ep_latin1", { host: "host-l" }));
        assert.deepEqual(await store.appendLines("ep_latin1", "events.jsonl", 1, [latin1]), {
          inserted: 1,
          duplicates: 0,
        });
        const got1 = await store.searchEvents("ZEBRA-latin1");
        assert.deepEqual(got1.hits.map((h) => [h.episode_id, h.field, h.match, h.before]), [[
          "ep_latin1",
          "output",
          "zebra-latin1",
          "caf\ufffd ",
        ]]);
      } finally {
        await store.close();
      }
    });
  });
}
