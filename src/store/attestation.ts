/**
 * Attestations of an episode (`noema attest`): an in-toto Statement v1 in a
 * DSSE envelope signed with an Ed25519 key, which standard tools (in-toto,
 * cosign's `verify-blob-attestation`, `openssl` over the PAE) can check with
 * the public key alone.
 *
 * The statement:
 * - `subject`: every artifact file of the episode, `manifest.json` included,
 *   as `{name, digest: {sha256}}` (name relative to the episode directory,
 *   the hex digest of its bytes). The episode is verified first (as
 *   `noema verify`, without a signature key): a tampered or incomplete
 *   episode is not attested.
 * - `predicateType`: {@link EPISODE_PREDICATE_TYPE}.
 * - `predicate` ({@link EpisodePredicate}): the task, the outcome, the
 *   policies (the rules as the built-in `Rules@1.0` among them) and other
 *   plugins with their digests, the verdict counts, the manifest's signature
 *   (alg and kid), and each decision recorded in `approvals/*.json` with
 *   its authenticated decider. Fields a record does not have are null.
 *
 * Everything in the predicate is read from files whose bytes match the
 * digests in `subject` (read once, hashed, then parsed).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { EXIT, NoemaError } from "../errors.ts";
import { canonicalJson, sha256, sha256File } from "./hash.ts";
import { readJsonText } from "./json_file.ts";
import { ARTIFACTS, type RootOptions } from "./layout.ts";
import type { Ed25519PrivateKey, Ed25519PublicKey } from "./ed25519_key.ts";
import { type DsseEnvelope, signDsse, verifyDsse } from "./dsse.ts";
import { verifyArtifacts } from "./integrity.ts";
import {
  announcedDifference,
  checkpointDigest,
  consumedDifference,
  type DecisionEvents,
  decisionEvents,
  type DecisionFile,
  decisionRecordProblem,
  unrecordedDecisions,
} from "./checkpoint_digest.ts";
import { isLockName, onlyALock } from "./lock.ts";
import { verifyManifestSignature } from "./signing.ts";
import { listEpisodeEntries } from "./manifest.ts";

/** The DSSE payload type of an in-toto statement. */
export const IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json";
/** The in-toto Statement v1 type. */
export const IN_TOTO_STATEMENT_TYPE = "https://in-toto.io/Statement/v1";
/** The predicate type of an episode attestation (documented in docs/security.md). */
export const EPISODE_PREDICATE_TYPE = "https://noema.dev/attestation/episode/v1";

/** One attested file. */
export interface StatementSubject {
  /** Path relative to the episode directory. */
  name: string;
  /** Its digest: hex sha256 of its bytes. */
  digest: { sha256: string };
}

/** One decision of the episode, as its approval record says. */
export interface AttestedDecision {
  checkpoint_id: string | null;
  decision: string | null;
  /** Who decided (the authenticated identity, when the record says which). */
  by: string | null;
  /** What `by` is: `database_role`, `serve_token`, `os_user`; null in records written before it was recorded. */
  authenticated_as: string | null;
  /** The database's `session_user` that wrote the decision, when a store did. */
  database_role: string | null;
  /** The display name given with `--by` (never trusted). */
  claimed_by: string | null;
  at: string | null;
  /** The hash of the state the decision was made on. */
  state_hash: string | null;
  /**
   * When a resume, or the agent's call it was made on, applied the decision (the record's `consumed_at`); null when
   * it never was: the run ended another way (`resume --abort`, say), and what it decided did not happen.
   */
  consumed_at: string | null;
  /** The id of the `run.resume` event that applied it (checked against the log); null when it never was applied. */
  consumed_by: string | null;
}

/** The predicate of {@link EPISODE_PREDICATE_TYPE}. */
export interface EpisodePredicate {
  episode_id: string;
  task: string | null;
  /** `summary.json`'s `outcome` (`success`, `error`, `vetoed`…). */
  outcome: string | null;
  adapter_result: string | null;
  verification_passed: boolean | null;
  started_at: string | null;
  duration_sec: number | null;
  /** Policies consulted (rules as `Rules@1.0`), with the sha256 of their files (null when built in). */
  policies: { id: string; path: string | null; sha256: string | null }[];
  /** Other plugins (adapter, planner…). */
  plugins: { id: string; kind: string; path: string | null; sha256: string | null }[];
  /** Verdict counts from `summary.json` (null when it does not say). */
  verdicts: { applied: number | null; vetoed: number | null; would_veto: number | null; failed: number | null };
  /**
   * The manifest's own signature, when the attesting key checked it (it signed the manifest, and the signature
   * verifies); null when the manifest is unsigned or signed by a key the attester cannot check (never vouched for).
   */
  manifest_signature: { alg: string; kid: string } | null;
  decisions: AttestedDecision[];
}

/** An in-toto Statement v1 about an episode. */
export interface EpisodeStatement {
  _type: typeof IN_TOTO_STATEMENT_TYPE;
  subject: StatementSubject[];
  predicateType: typeof EPISODE_PREDICATE_TYPE;
  predicate: EpisodePredicate;
}

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const num = (v: unknown): number | null => (typeof v === "number" ? v : null);
const obj = (v: unknown): Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : {};

/** Reads a JSON artifact whose bytes must still have the digest verified a moment ago. */
function readAttested(dir: string, name: string, digest: string): Record<string, unknown> {
  const { text, value } = readJsonText(join(dir, name), name);
  if (sha256(text) !== digest) {
    throw new NoemaError("tampered", "changed while being attested; attest again", {
      exitCode: EXIT.USAGE,
      file: join(dir, name),
    });
  }
  return value;
}

/**
 * An approval record read for the attestation, refused (exit 2, as a tampered file) unless it is what it claims to
 * be: a decision on a checkpoint this episode has (`checkpoints/<id>.json` beside it), naming this episode and that
 * checkpoint, `approved` or `rejected`. A record planted for a checkpoint that never existed is never attested.
 */
function checkedDecision(
  dir: string,
  episodeId: string,
  name: string,
  digests: ReadonlyMap<string, string>,
  events: DecisionEvents,
): Record<string, unknown> {
  const r = readAttested(dir, name, digests.get(name)!);
  const id = name.slice("approvals/".length, -".json".length);
  const checkpointName = `checkpoints/${id}.json`;
  const why = !digests.has(checkpointName)
    ? `no ${checkpointName}: a decision on a checkpoint this run never had`
    : decisionRecordProblem(r, id, episodeId) ??
      boundProblem(r, readAttested(dir, checkpointName, digests.get(checkpointName)!), events);
  if (why !== null) {
    throw new NoemaError("tampered", `cannot attest ${episodeId}: ${name}: ${why}`, {
      exitCode: EXIT.USAGE, // verify's exit code for a tampered file
      file: join(dir, name),
    });
  }
  return r;
}

/**
 * Why a decision is not the one the log shows was asked for and applied, or null: its checkpoint is not the one a
 * `run.checkpoint` event announced, its `checkpoint_digest` (when it has one) is not that checkpoint's, or, consumed,
 * it differs from the `run.resume` event that applied it (rewritten after the fact).
 */
function boundProblem(
  r: Record<string, unknown>,
  checkpoint: Record<string, unknown>,
  events: DecisionEvents,
): string | null {
  const id = String(r.checkpoint_id);
  const announcedAs = events.checkpoints.get(id);
  const differs = announcedAs === undefined
    ? "no run.checkpoint event announced it"
    : announcedDifference(checkpoint, announcedAs);
  if (differs !== null) return `checkpoints/${id}.json is not the checkpoint the log announced (${differs})`;
  if (typeof r.checkpoint_digest === "string" && r.checkpoint_digest !== checkpointDigest(checkpoint)) {
    return `its checkpoint_digest is not checkpoints/${id}.json's: it decided another pending action`;
  }
  if (r.consumed_at === null || r.consumed_at === undefined) return null;
  const resume = typeof r.consumed_by === "string" ? events.resumes.get(r.consumed_by) : undefined;
  if (resume === undefined) return `consumed_by ${JSON.stringify(r.consumed_by)} names no run.resume event`;
  const field = consumedDifference(r, resume);
  return field === null
    ? null
    : `its ${field} is not the one the run.resume event that applied it recorded (the record changed afterwards)`;
}

/**
 * Refuses (exit 2, as a tampered file) an episode whose log asked or applied a decision its sealed files do not hold:
 * a checkpoint or a used decision deleted, or a decision rewritten as never applied, before the seal.
 */
function refuseUnrecorded(
  dir: string,
  episodeId: string,
  events: DecisionEvents,
  digests: ReadonlyMap<string, string>,
  records: readonly Record<string, unknown>[],
): void {
  const byId = new Map(records.map((r) => [String(r.checkpoint_id), r]));
  const listed = (name: string): DecisionFile => digests.has(name) ? "unreadable" : "absent";
  const [first] = unrecordedDecisions(
    events,
    (id) => listed(`checkpoints/${id}.json`),
    (id) => byId.get(id) ?? listed(`approvals/${id}.json`),
  );
  if (first === undefined) return;
  throw new NoemaError("tampered", `cannot attest ${episodeId}: ${first.file}: ${first.why}`, {
    exitCode: EXIT.USAGE,
    file: join(dir, first.file),
  });
}

/** The decision of one approval record. */
function decisionOf(r: Record<string, unknown>): AttestedDecision {
  return {
    checkpoint_id: str(r.checkpoint_id),
    decision: str(r.decision),
    by: str(r.by),
    authenticated_as: str(r.authenticated_as),
    database_role: str(r.database_role),
    claimed_by: str(r.claimed_by),
    at: str(r.at),
    state_hash: str(r.state_hash),
    // A consumed record was checked against the run.resume event it names (boundProblem); another names nothing.
    consumed_at: str(r.consumed_at),
    consumed_by: str(r.consumed_at) === null ? null : str(r.consumed_by),
  };
}

/** The predicate, from the verified manifest, summary and approval records. */
function predicateOf(
  dir: string,
  episodeId: string,
  manifest: Record<string, unknown>,
  digests: ReadonlyMap<string, string>,
  signer: Ed25519PublicKey | null,
): EpisodePredicate {
  const summary = readAttested(dir, ARTIFACTS.summary, digests.get(ARTIFACTS.summary)!);
  const plugins = (Array.isArray(manifest.plugins) ? manifest.plugins : []).map(obj);
  const direction = obj(obj(summary.flags).direction);
  const metrics = obj(summary.metrics);
  // The manifest's signature first: a record edited and rehashed under a signed manifest is that signature's failure (4).
  const manifestSignature = checkedSignature(episodeId, manifest, signer);
  const names = [...digests.keys()].filter((name) => /^approvals\/[^/]+\.json$/.test(name));
  const events = decisionEvents(join(dir, ARTIFACTS.events));
  const records = names.map((name) => checkedDecision(dir, episodeId, name, digests, events));
  refuseUnrecorded(dir, episodeId, events, digests, records);
  const decisions = records.map(decisionOf);
  return {
    episode_id: episodeId,
    task: str(summary.task),
    outcome: str(summary.outcome),
    adapter_result: str(summary.adapter_result),
    verification_passed: typeof obj(summary.verification).passed === "boolean"
      ? obj(summary.verification).passed as boolean
      : null,
    started_at: str(summary.started_at),
    duration_sec: num(summary.duration_sec),
    policies: plugins.filter((p) => p.kind === "policy").map((p) => ({
      id: String(p.id),
      path: str(p.path),
      sha256: str(p.sha256),
    })),
    plugins: plugins.filter((p) => p.kind !== "policy").map((p) => ({
      id: String(p.id),
      kind: String(p.kind),
      path: str(p.path),
      sha256: str(p.sha256),
    })),
    verdicts: {
      applied: num(direction.applied),
      vetoed: num(direction.vetoed),
      would_veto: num(metrics.would_veto_count),
      failed: num(direction.failed),
    },
    manifest_signature: manifestSignature,
    decisions,
  };
}

/**
 * The manifest's signature as the attestation states it: `{alg, kid}` only when `signer` (the attesting key's
 * public half) verifies it; null when there is none or it is another key's (not vouched for). A signature that
 * names the signer's key and does not verify (the manifest changed after it was signed) is refused, exit 4 as
 * `noema verify --public-key` would.
 */
function checkedSignature(
  episodeId: string,
  manifest: Record<string, unknown>,
  signer: Ed25519PublicKey | null,
): { alg: string; kid: string } | null {
  if (manifest.signature === undefined || manifest.signature === null || signer === null) return null;
  const check = verifyManifestSignature(manifest, signer);
  if (check.status === "valid") return { alg: check.alg!, kid: check.kid! };
  if (check.status === "bad_signature" && obj(manifest.signature).kid === signer.kid) {
    throw new NoemaError(
      "not_verified",
      `cannot attest ${episodeId}: manifest.json: ${check.message} (see noema verify ${episodeId} --public-key)`,
      { exitCode: EXIT.PAUSED }, // verify's exit code for a signature that does not verify
    );
  }
  return null;
}

/** A verify problem in words: its file, then what (without the file named twice). */
function whatFailed(file: string, message: string): string {
  return message.startsWith(file) ? message : `${file}: ${message}`;
}

/**
 * The in-toto statement about an episode (an id, a directory or its
 * manifest). The episode must verify (every file matches its manifest, none
 * missing or unlisted); otherwise a {@link NoemaError} names the first
 * problem, with `noema verify`'s exit code (2 tampered, 3 missing, 4 a
 * malformed signature). With `signer` (the attesting key's public key), the
 * manifest's signature is checked too: see {@link EpisodePredicate}'s
 * `manifest_signature` (a signature by `signer` that does not verify: 4).
 *
 * @example
 * ```ts
 * import { episodeStatement } from "noema";
 * episodeStatement("ep_01K9RBBMXXRSFWR49SXFGF4SPR", { root: ".noema" }).subject.length; // 5
 * ```
 */
export function episodeStatement(
  target: string,
  options: RootOptions = {},
  signer: Ed25519PublicKey | null = null,
): EpisodeStatement {
  const report = verifyArtifacts(target, { ...options, key: null });
  const problem = report.issues.find((i) => i.severity === "error");
  if (problem || report.exit_code !== 0) {
    throw new NoemaError(
      "not_verified",
      `cannot attest ${report.episode_id}: ${
        problem ? whatFailed(problem.file, problem.message) : "does not verify"
      } ` +
        `(see noema verify ${report.episode_id})`,
      { exitCode: report.exit_code === 0 ? EXIT.USAGE : report.exit_code }, // verify's: 2 tampered, 3 missing, 4 signature
    );
  }
  const { text: manifestText, value: manifest } = readJsonText(report.manifest, ARTIFACTS.manifest);
  const digests = new Map<string, string>();
  for (const f of report.files) if (f.actual) digests.set(f.name, f.actual.sha256);
  const subject: StatementSubject[] = [...digests].map(([name, digest]) => ({
    name,
    digest: { sha256: digest.slice("sha256:".length) },
  }));
  subject.push({ name: ARTIFACTS.manifest, digest: { sha256: sha256(manifestText).slice("sha256:".length) } });
  return {
    _type: IN_TOTO_STATEMENT_TYPE,
    subject,
    predicateType: EPISODE_PREDICATE_TYPE,
    predicate: predicateOf(report.episode_dir, report.episode_id, manifest, digests, signer),
  };
}

/**
 * Attests an episode: its {@link episodeStatement} as the canonical JSON
 * payload of a DSSE envelope signed with `key`.
 *
 * @example
 * ```ts
 * import { attestEpisode, readPrivateKeyFile } from "noema";
 * const envelope = attestEpisode("ep_01K9RBBMXXRSFWR49SXFGF4SPR", readPrivateKeyFile("noema-signing.key"));
 * ```
 */
export function attestEpisode(target: string, key: Ed25519PrivateKey, options: RootOptions = {}): DsseEnvelope {
  const statement = episodeStatement(target, options, { alg: "ed25519", kid: key.kid, publicKey: key.publicKey });
  return signDsse(IN_TOTO_PAYLOAD_TYPE, Buffer.from(canonicalJson(statement), "utf8"), key);
}

/** The result of {@link verifyAttestation}. */
export interface AttestationCheck {
  /** The signature verifies and the payload is an in-toto statement of {@link EPISODE_PREDICATE_TYPE}. */
  valid: boolean;
  /** The statement, when the payload parses. */
  statement: EpisodeStatement | null;
  /** What is wrong (null when valid). */
  message: string | null;
}

/**
 * Checks an attestation with the Ed25519 public key alone: the DSSE
 * signature over the PAE, the payload type, and that the payload is an
 * in-toto Statement v1 with the episode predicate.
 *
 * @example
 * ```ts
 * import { readFileSync } from "node:fs";
 * import { readPublicKeyFile, verifyAttestation } from "noema";
 * const envelope = JSON.parse(readFileSync("ep.intoto.json", "utf8"));
 * const check = verifyAttestation(envelope, readPublicKeyFile("noema-signing.key.pub"));
 * console.log(check.valid, check.statement?.predicate.decisions);
 * ```
 */
export function verifyAttestation(envelope: unknown, key: Ed25519PublicKey): AttestationCheck {
  const dsse = verifyDsse(envelope, key);
  if (!dsse.valid) return { valid: false, statement: null, message: dsse.message };
  if (dsse.payloadType !== IN_TOTO_PAYLOAD_TYPE) {
    return { valid: false, statement: null, message: `payloadType: ${dsse.payloadType}, not ${IN_TOTO_PAYLOAD_TYPE}` };
  }
  let statement: EpisodeStatement;
  try {
    statement = JSON.parse(dsse.payload!.toString("utf8"));
  } catch (e) {
    return { valid: false, statement: null, message: `payload: not JSON (${(e as Error).message})` };
  }
  if (obj(statement)._type !== IN_TOTO_STATEMENT_TYPE || obj(statement).predicateType !== EPISODE_PREDICATE_TYPE) {
    return {
      valid: false,
      statement,
      message: `payload: not an in-toto statement with predicateType ${EPISODE_PREDICATE_TYPE}`,
    };
  }
  return { valid: true, statement, message: null };
}

/**
 * Compares an attested statement with an episode on disk: every file of the
 * episode (its manifest included) must be a subject with the sha256 of its
 * bytes, and every subject a file (a lock file left by a killed process
 * aside). Returns the differences in words (empty when the episode is the
 * one attested).
 *
 * @example
 * ```ts
 * import { readFileSync } from "node:fs";
 * import { readPublicKeyFile, subjectMismatches, verifyAttestation } from "noema";
 * const check = verifyAttestation(JSON.parse(readFileSync("ep.intoto.json", "utf8")), readPublicKeyFile("k.pub"));
 * if (check.statement) console.log(subjectMismatches(check.statement, ".noema/episodes/ep_01K9…"));
 * ```
 */
export function subjectMismatches(statement: EpisodeStatement, dir: string): string[] {
  const attested = new Map<string, unknown>();
  for (const s of Array.isArray(statement.subject) ? statement.subject : []) {
    attested.set(String(obj(s).name), obj(obj(s).digest).sha256);
  }
  const onDisk = [
    // Only the lock and its claims (`lock.tmp-…`), holding a lock and nothing more, are left aside: any other file is
    // a file like the rest.
    ...listEpisodeEntries(dir).map((e) => e.name).filter((n) => !(isLockName(n) && onlyALock(dir, n))),
    ARTIFACTS.manifest,
  ];
  const out: string[] = [];
  for (const name of onDisk) {
    if (!attested.has(name)) {
      out.push(`${name}: not in the attestation`);
      continue;
    }
    let digest: string;
    try {
      digest = sha256File(join(dir, name)).sha256.slice("sha256:".length);
    } catch (e) {
      out.push(`${name}: cannot be read (${(e as Error).message})`);
      continue;
    }
    if (attested.get(name) !== digest) out.push(`${name}: sha256 differs from the attestation`);
    attested.delete(name);
  }
  for (const name of attested.keys()) out.push(`${name}: attested, but not in the episode`);
  return out;
}
