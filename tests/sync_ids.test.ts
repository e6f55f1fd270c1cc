// `noema sync ID…` publishes only the episodes named; an id the root does not hold (a typo) is an error naming it,
// exit 1, with nothing published, not "synced 0 episodes" and exit 0.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-sync-ids-");
after(() => tmp.cleanup());

test("sync ID publishes that episode; an id the root does not hold is an error naming it", () => {
  const root = join(tmp.path, "root");
  const url = pathToFileURL(join(tmp.path, "store")).href;
  const env = { NOEMA_STORE: url, NOEMA_ROOT: undefined, NOEMA_PROJECT: undefined };
  assert.equal(cli(["store", "init"], { env }).code, 0);
  const run = cli(["--root", root, "run", "hello", "-q"], { env: { ...env, NOEMA_STORE: undefined } });
  assert.equal(run.code, 0, run.stderr);
  const id = run.stdout.trim();

  const typo = cli(["--root", root, "sync", "ep_nothere", "--json"], { env });
  assert.equal(typo.code, 1, typo.stdout + typo.stderr);
  assert.match(typo.stderr, /^noema: episode ep_nothere not found in \S+episodes\n$/);
  assert.equal(typo.stdout, "", "nothing published");

  const named = cli(["--root", root, "sync", id, "--json"], { env });
  assert.equal(named.code, 0, named.stderr);
  const rows = named.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(rows.map((r) => [r.episode_id, r.error]), [[id, null]]);
});
