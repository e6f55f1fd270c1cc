// The decider an approval names (`by`, `authenticated_as: "os_user"`) is the OS account running noema, as the
// system knows it: the environment cannot choose it.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { type AdapterPlugin, EXIT, run, type RunOptions } from "noema";
import { tempDir } from "./helpers/tmp.ts";
import { cli } from "./helpers/cli.ts";
import { osUserName } from "../src/runtime/os_user.ts";

const tmp = tempDir();
after(() => tmp.cleanup());
const root = join(tmp.path, "root");
const json = (dir: string, name: string) => JSON.parse(readFileSync(join(dir, name), "utf8"));
const recording: AdapterPlugin = { name: "recording", create: () => ({ act: () => ({ status: "ok" }) }) };
const reviewPlan: RunOptions["steps"] = [
  { kind: "review", description: "a human checks the change", inputs: { change: "rename" } },
  { kind: "act", description: "apply", inputs: { command: "apply" } },
];

test("the OS user a decision names is the system's, never $USER's (real CLI child)", async () => {
  // Found by an audit: under Bun (the shipped binary's runtime), os.userInfo() gives $USER, so
  // `USER=ana noema approve` recorded by: "ana", authenticated_as: "os_user", whoever ran it.
  const r = await run("change with review", { root, using: recording, steps: reviewPlan });
  assert.equal(r.exit_code, EXIT.PAUSED);
  const forged = "mallory-not-an-account";
  const out = cli(["--root", root, "approve", r.episode_id, "--json"], {
    env: { USER: forged, LOGNAME: forged, USERNAME: forged },
  });
  assert.equal(out.code, 0, out.stderr);
  const record = json(r.episode_dir, `approvals/${r.checkpoint_id}.json`);
  assert.equal(record.authenticated_as, "os_user");
  assert.notEqual(record.by, forged);
  assert.equal(record.by, osUserName());
  const saved = process.env.USER;
  process.env.USER = forged;
  try {
    assert.notEqual(osUserName(), forged);
  } finally {
    if (saved === undefined) delete process.env.USER;
    else process.env.USER = saved;
  }
});
