/**
 * An episode killed while sealing: its run ended (the terminal artifacts
 * were being put into place) but `manifest.json`, renamed last, is missing,
 * and no live process holds the episode. The terminal `state.json` and
 * `summary.json` are written under temp names first; the state is renamed
 * into place, then its `run.state_projection` is logged, then the manifest is
 * staged and the summary and the manifest are renamed. So such an episode has
 * a staged `state.json.tmp-staged-…` (killed before the state's rename: the
 * episode is still valid, not terminal), a `state.json` naming a summary that
 * does not exist, or a staged `manifest.json.tmp-…`. A `summary.json` with
 * neither a manifest nor a staged one is a terminal run of another
 * implementation. `noema resume` completes the seal.
 *
 * @module
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { readJsonFile } from "../store/json_file.ts";
import { ARTIFACTS } from "../store/layout.ts";
import { lockStatus } from "../store/lock.ts";
import { calledAs } from "../called_as.ts";

/** Whether `state.json` names the terminal links (`summary`, `manifest`); false when it cannot be read. */
function namesTerminalLinks(dir: string): boolean {
  try {
    const state = join(dir, ARTIFACTS.state);
    const links = readJsonFile(state, state, { noFollow: true }).links as Record<string, unknown> | undefined;
    return typeof links?.manifest === "string" || typeof links?.summary === "string";
  } catch {
    return false;
  }
}

/**
 * Whether the episode in `dir` crashed while sealing (see the module doc).
 *
 * @example
 * ```ts
 * import { crashedWhileSealing } from "./sealing.ts";
 * if (crashedWhileSealing(".noema/episodes/ep_1")) console.log("crashed while sealing: noema resume ep_1");
 * ```
 */
export function crashedWhileSealing(dir: string): boolean {
  // The writer first: a live one may finish sealing, and let go of its lock, between two looks at the files; once no
  // live process holds the lock, the files no longer change under this reader.
  if (lockStatus(dir).state === "held") return false;
  if (existsSync(join(dir, ARTIFACTS.manifest))) return false;
  // A summary without a manifest and without a staged one is another implementation's terminal run, not a crash.
  return hasStagedSeal(dir) || (!existsSync(join(dir, ARTIFACTS.summary)) && namesTerminalLinks(dir));
}

/** Whether a staged manifest (`manifest.json.tmp-…`) or terminal state (`state.json.tmp-staged-…`) waits there. */
function hasStagedSeal(dir: string): boolean {
  try {
    return readdirSync(dir).some((n) =>
      n.startsWith(`${ARTIFACTS.manifest}.tmp-`) || n.startsWith(`${ARTIFACTS.state}.tmp-staged-`)
    );
  } catch {
    return false;
  }
}

/**
 * What readers say about such an episode, pointing to the repair.
 *
 * @example
 * ```ts
 * import { sealingNote } from "./sealing.ts";
 * sealingNote("ep_1"); // "crashed while sealing: … noema resume ep_1 …"
 * ```
 */
export function sealingNote(id: string): string {
  return `crashed while sealing (killed while its terminal artifacts were put into place; manifest.json is missing): ` +
    `${calledAs()} resume ${id} completes them`;
}
