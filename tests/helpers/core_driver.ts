/**
 * A separate process driving an episode through `EpisodeCore.attach`: for
 * each call id given, propose a Bash call and record its result, then close.
 * Prints one JSON line per decision.
 *
 *     core_driver.ts <root> <episode_id> <call_id>...
 *
 * With `NOEMA_TEST_DIE_AFTER=N`, the process kills itself (SIGKILL) after the
 * N-th call's events were appended, before the state is written: a crash.
 *
 * @module
 */
import process from "node:process";
import { EpisodeCore } from "../../mod.ts";

const [root, episodeId, ...callIds] = process.argv.slice(2);
const core = await EpisodeCore.attach(episodeId, { root, waitMs: 60_000 });
// The crash is before the state is written: record's own writes (when it has spent little time writing, which a busy
// machine decides) would make that a race.
if (process.env.NOEMA_TEST_DIE_AFTER) core.autoFlush = false;
try {
  for (const callId of callIds) {
    const d = await core.propose({ kind: "tool", tool: "Bash", input: { command: `echo ${callId}` }, call_id: callId });
    await core.record(callId, { status: "ok", outcome: "exit 0", output: { stdout: callId }, duration_ms: 1 });
    process.stdout.write(JSON.stringify({ call_id: callId, verdict: d.verdict, step_id: d.step_id }) + "\n");
    if (Number(process.env.NOEMA_TEST_DIE_AFTER) === callIds.indexOf(callId) + 1) process.kill(process.pid, "SIGKILL");
  }
} finally {
  core.close();
}
