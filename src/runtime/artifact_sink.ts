/**
 * The one place an episode's artifact bytes go through: every JSON value
 * written under the episode directory (events, `state.json`, `learn.jsonl`,
 * checkpoints, approvals, snapshots, and any file added later) is masked here,
 * keys and string values alike, before it is serialised. A new field cannot
 * leak a secret because nothing decides field by field.
 *
 * Cost: the value is serialised once; a fast test on that text (named secret
 * values, raw and JSON-escaped, and a literal part of every token pattern)
 * lets almost every value through unchanged. Only a value that might hold a
 * secret is walked and serialised again.
 *
 * @module
 */
import { join } from "node:path";
import process from "node:process";
import { type StagedFile, stageFile, writeFileAtomic } from "../store/atomic.ts";
import type { FileDigest } from "../store/hash.ts";
import { JsonlAppender, readJsonl } from "../store/jsonl.ts";
import { ARTIFACTS } from "../store/layout.ts";
import { episodeRoot } from "../store/nofollow.ts";
import { declareSecrets, Redactor } from "./redact.ts";
import { joinListParts, splitAtList } from "./shared_list_text.ts";

/**
 * The longest JSON artifact written indented, in UTF-16 units of its one-line form (1 MiB): a larger one (the
 * `state.json` of a long run, with every action) is written on one line. Indenting costs four times the
 * serialising and about 60% more bytes to write and fsync, for a file no one reads by eye at that size
 * (`jq .` lays it out).
 */
export const INDENT_MAX_CHARS = 1 << 20;

/** Options of {@link ArtifactSink.writeJson}. */
export interface WriteJsonOptions extends SharedOption {
  /** Fail (EEXIST) when the file already exists. @default {false} */
  exclusive?: boolean;
  /** Indentation; `0` writes one line (and so does any value over {@link INDENT_MAX_CHARS}). @default {2} */
  indent?: number;
  /** fsync the file and its directory (see `writeFileAtomic`). @default {true} */
  durable?: boolean;
}

/**
 * The option of the writes of {@link ArtifactSink} that names a list in the
 * value (by identity, at most four objects down: `state.outcomes.actions`)
 * whose entries are objects that never change once written, like action
 * records: each entry is serialised (and masked) once, at its first write, and
 * its text reused by every later write that holds it. The text written is the
 * same. A list not in the value, or holding an entry that had to be masked, is
 * serialised as usual.
 */
export interface SharedOption {
  /** The list. @default {undefined} */
  shared?: readonly unknown[];
}

/** A {@link JsonlAppender} whose every line is masked first, whether appended as a value or as JSON text. */
class MaskingJsonlAppender extends JsonlAppender {
  constructor(path: string, readonly sink: ArtifactSink) {
    super(path, { root: episodeRoot(sink.dir) });
  }

  override append(value: unknown): string {
    const text = this.sink.serialize(value, 0).text;
    super.appendRaw(text);
    return text;
  }

  /** Appends a JSON text, masked (a text that might hold a secret is parsed, masked and serialised again). */
  override appendRaw(text: string): void {
    const redactor = this.sink.redactor;
    super.appendRaw(redactor.mightContain(text) ? JSON.stringify(redactor.redact(JSON.parse(text)).value) : text);
  }
}

/**
 * Writes the artifacts of one episode directory, masking secrets in every
 * value. Paths are relative to the episode directory. Nothing is written
 * through a symbolic link anywhere below the episode's root
 * (`<root>/episodes/<id>`; see `refuseSymlinks`).
 *
 * @example
 * ```ts
 * import { ArtifactSink, Redactor } from "noema";
 * const sink = new ArtifactSink("/tmp/ep", new Redactor({ secrets: ["API_TOKEN"] }));
 * sink.appendJsonl("events.jsonl", { id: "e1", payload: { note: "uses $API_TOKEN" } });
 * sink.writeJson("state.json", { version: "1.0" });
 * sink.close();
 * ```
 */
export class ArtifactSink {
  /** The masker. */
  readonly redactor: Redactor;
  /** The episode directory (follows a rename, see {@link ArtifactSink.moveTo}). */
  dir: string;
  readonly #appenders = new Map<string, JsonlAppender>();
  /** The digests of JSONL files as closed, when hashed in the background (see {@link ArtifactSink.closedDigest}). */
  readonly #closed = new Map<string, FileDigest>();
  /** The text of each entry of a shared list written so far (see {@link SharedOption}). */
  readonly #entryTexts = new WeakMap<object, string>();
  #withdraw: (() => void) | undefined;

  /**
   * While the sink is open its redactor is declared (`declare`, default
   * true), so child processes' output excerpts are masked with it before
   * they are cut (see `runProcess`).
   */
  constructor(dir: string, redactor: Redactor, options: { declare?: boolean } = {}) {
    this.dir = dir;
    this.redactor = redactor;
    if (options.declare !== false) this.#withdraw = declareSecrets(redactor);
  }

  /**
   * A sink for an existing episode, masking with the secret names its run
   * recorded (`settings.secrets` of the `start` event) and their values in
   * this process's environment. Used by writers outside the run's process
   * (`noema approve`).
   *
   * @example
   * ```ts
   * import { ArtifactSink } from "noema";
   * // ArtifactSink.forEpisode(".noema/episodes/ep_01K9…").writeJson("approvals/chk_….json", record);
   * ```
   */
  static forEpisode(dir: string, env: Record<string, string | undefined> = process.env): ArtifactSink {
    return new ArtifactSink(dir, new Redactor({ secrets: recordedSecretNames(dir), env }), { declare: false });
  }

  /** Follows the episode directory after it was renamed (open logs move with it). */
  moveTo(dir: string): void {
    this.dir = dir;
  }

  /**
   * Masks secrets in a JSON value (keys and strings); returns the same value
   * when nothing was masked.
   *
   * @example
   * ```ts
   * import { ArtifactSink, Redactor } from "noema";
   * new ArtifactSink("/tmp/ep", new Redactor()).mask({ a: "ghp_" + "x".repeat(36) }); // { a: "[REDACTED]" }
   * ```
   */
  mask = <T>(value: T): T => {
    const text = JSON.stringify(value);
    if (text === undefined || !this.redactor.mightContain(text)) return value;
    return this.redactor.redact(value).value;
  };

  /**
   * Serialises a value with secrets masked: `text` is what to write (indented
   * by `indent`, unless its one-line form is over {@link INDENT_MAX_CHARS}),
   * `value` the masked value (the same object when nothing was masked).
   * `shared` names a list in it whose entries' texts are reused (see
   * {@link SharedOption}).
   *
   * @example
   * ```ts
   * import { ArtifactSink, Redactor } from "noema";
   * new ArtifactSink("/tmp/ep", new Redactor()).serialize({ a: 1 }, 0).text; // '{"a":1}'
   * ```
   */
  serialize<T>(value: T, indent = 2, shared?: readonly unknown[]): { text: string; value: T } {
    if (shared !== undefined && shared.length > 0) {
      const text = this.#withShared(value, indent, shared);
      if (text !== null) return { text, value };
    }
    let text = JSON.stringify(value);
    if (text === undefined) throw new TypeError("artifact values must be JSON values");
    const spaces = indent > 0 && text.length <= INDENT_MAX_CHARS ? indent : undefined;
    if (!this.redactor.mightContain(text)) return { text: spaces ? JSON.stringify(value, null, spaces) : text, value };
    const masked = this.redactor.redact(value).value;
    text = JSON.stringify(masked, null, spaces);
    return { text, value: masked };
  }

  /** The cached text of a shared list's entry; null for an entry that had to be masked (it is not cached). */
  #entryText(entry: object): string | null {
    const cached = this.#entryTexts.get(entry);
    if (cached !== undefined) return cached;
    const out = this.serialize(entry, 0);
    if (out.value !== entry) return null; // masked: not the entry the value holds
    this.#entryTexts.set(entry, out.text);
    return out.text;
  }

  /**
   * The one-line text of a value holding the shared list, from the entries'
   * cached texts; null when it must be serialised as usual: small enough to
   * be indented, the rest of it or an entry masked, or the list not found.
   */
  #withShared(value: unknown, indent: number, shared: readonly unknown[]): string | null {
    const parts = splitAtList(value, shared, (entry) => this.#entryText(entry));
    if (parts === null || (indent > 0 && parts.length <= INDENT_MAX_CHARS)) return null;
    if (this.redactor.mightContain(parts.rest)) return null;
    return joinListParts(parts);
  }

  /**
   * Appends one value as one line of a JSONL file (opened once, kept open
   * until {@link ArtifactSink.close}); returns the value as written. The line
   * reaches the file at the next {@link ArtifactSink.flush} (or any other
   * write of this sink), and at the latest on the next turn of the event loop.
   *
   * @example
   * ```ts
   * import { ArtifactSink, Redactor } from "noema";
   * const sink = new ArtifactSink("/tmp/ep", new Redactor());
   * sink.appendJsonl("events.jsonl", { id: "e1" });
   * sink.close();
   * ```
   */
  appendJsonl<T>(file: string, value: T, options: SharedOption = {}): T {
    const out = this.serialize(value, 0, options.shared);
    this.#appender(file).appendRaw(out.text);
    return out.value;
  }

  /**
   * A JSONL appender for `file` that masks every value (for code that takes
   * a {@link JsonlAppender}); it belongs to the caller, who closes it.
   *
   * @example
   * ```ts
   * import { ArtifactSink, Redactor } from "noema";
   * const learn = new ArtifactSink("/tmp/ep", new Redactor()).jsonl("learn.jsonl");
   * learn.append({ kind: "learn" });
   * learn.close();
   * ```
   */
  jsonl(file: string): JsonlAppender {
    return new MaskingJsonlAppender(join(this.dir, file), this);
  }

  /**
   * Writes a JSON file atomically (pretty, final newline), masked; returns
   * the value as written.
   *
   * @example
   * ```ts
   * import { ArtifactSink, Redactor } from "noema";
   * new ArtifactSink("/tmp/ep", new Redactor()).writeJson("state.json", { version: "1.0" });
   * ```
   */
  writeJson<T>(file: string, value: T, options: WriteJsonOptions = {}): T {
    this.flush(); // what the logs say comes first: another artifact may refer to it
    const out = this.serialize(value, options.indent ?? 2, options.shared);
    writeFileAtomic(join(this.dir, file), out.text + "\n", {
      exclusive: options.exclusive,
      durable: options.durable,
      root: episodeRoot(this.dir),
    });
    return out.value;
  }

  /**
   * Writes a JSON file like {@link ArtifactSink.writeJson} (masked, pretty,
   * fsynced) under a temp name, for `commitStaged` to rename into place with
   * other files in one tight sequence (sealing a run).
   *
   * @example
   * ```ts
   * import { ArtifactSink, Redactor } from "noema";
   * import { commitStaged } from "../store/atomic.ts";
   * commitStaged([new ArtifactSink("/tmp/ep", new Redactor()).stageJson("summary.json", { a: 1 })]);
   * ```
   */
  stageJson<T>(file: string, value: T, options: SharedOption = {}): StagedFile {
    this.flush(); // what the logs say comes first: another artifact may refer to it
    const text = this.serialize(value, 2, options.shared).text;
    return stageFile(join(this.dir, file), text + "\n", { root: episodeRoot(this.dir) });
  }

  /**
   * Writes a file whose text a serialiser builds from a masked value (for
   * formats with their own layout, like snapshots).
   *
   * @example
   * ```ts
   * import { ArtifactSink, Redactor } from "noema";
   * new ArtifactSink("/tmp/ep", new Redactor()).writeWith("x.json", { a: 1 }, (v) => JSON.stringify(v));
   * ```
   */
  writeWith<T>(file: string, value: T, serialise: (masked: T) => string): T {
    this.flush();
    const masked = this.mask(value);
    writeFileAtomic(join(this.dir, file), serialise(masked), { root: episodeRoot(this.dir) });
    return masked;
  }

  /**
   * Opens a JSONL file for appending now (it is otherwise opened by the first
   * append), e.g. before the episode directory is renamed.
   *
   * @example
   * ```ts
   * import { ArtifactSink, Redactor } from "noema";
   * new ArtifactSink("/tmp/ep", new Redactor()).open("events.jsonl");
   * ```
   */
  open(file: string): void {
    this.#appender(file);
  }

  /**
   * Writes the lines the JSONL files appended here hold in memory. Lines are
   * written in batches (the `buffered` option of {@link JsonlAppender}): call this
   * before anything acts on what was logged, e.g. before an action runs.
   * Every other artifact write, `sync` and `close` flush first.
   *
   * @example
   * ```ts
   * import { ArtifactSink, Redactor } from "noema";
   * const sink = new ArtifactSink("/tmp/ep", new Redactor());
   * sink.appendJsonl("events.jsonl", { id: "e1" });
   * sink.flush(); // on disk now
   * ```
   */
  flush(): void {
    for (const a of this.#appenders.values()) a.flush();
  }

  /**
   * Writes what a JSONL file holds in memory and starts flushing it to disk
   * in the background (a later {@link ArtifactSink.sync} then waits less).
   *
   * @example
   * ```ts
   * import { ArtifactSink, Redactor } from "noema";
   * const sink = new ArtifactSink("/tmp/ep", new Redactor());
   * sink.appendJsonl("events.jsonl", { id: "e1" });
   * sink.syncSoon("events.jsonl");
   * ```
   */
  syncSoon(file: string): void {
    this.#appenders.get(file)?.syncSoon();
  }

  /** Flushes the open JSONL files to disk. */
  sync(file?: string): void {
    if (file !== undefined) this.#appenders.get(file)?.sync();
    else for (const a of this.#appenders.values()) a.sync();
  }

  /** Flushes and closes the open JSONL files; the sink stops declaring its redactor. Idempotent. */
  close(): void {
    try {
      for (const [file, a] of this.#appenders) {
        a.close();
        if (a.digest !== null) this.#closed.set(file, a.digest);
      }
    } finally {
      this.#withdraw?.();
      this.#withdraw = undefined;
    }
  }

  /**
   * Size and `sha256:` of a JSONL file this sink closed, hashed as it was written (a long log: see
   * `store/log_digest.ts`), or null (then hash the file).
   *
   * @example
   * ```ts
   * import { ArtifactSink, Redactor } from "noema";
   * const sink = new ArtifactSink("/tmp/ep", new Redactor());
   * sink.appendJsonl("events.jsonl", { id: "e1" });
   * sink.close();
   * sink.closedDigest("events.jsonl"); // null: a short log is not hashed in the background
   * ```
   */
  closedDigest(file: string): FileDigest | null {
    return this.#closed.get(file) ?? null;
  }

  #appender(file: string): JsonlAppender {
    let a = this.#appenders.get(file);
    if (!a) {
      a = new JsonlAppender(join(this.dir, file), { buffered: true, root: episodeRoot(this.dir), digest: true });
      this.#appenders.set(file, a);
    }
    return a;
  }
}

/**
 * The secret names a run recorded in its `start` event (`settings.secrets`),
 * or `[]` when there are none (or no readable start event).
 *
 * @example
 * ```ts
 * import { recordedSecretNames } from "noema";
 * recordedSecretNames(".noema/episodes/ep_01K9…"); // ["API_TOKEN"]
 * ```
 */
export function recordedSecretNames(dir: string): string[] {
  try {
    for (const entry of readJsonl(join(dir, ARTIFACTS.events))) {
      if (entry.problem) return [];
      const settings = (entry.value.payload as { settings?: { secrets?: unknown } } | undefined)?.settings;
      const names = settings?.secrets;
      return Array.isArray(names) ? names.filter((n): n is string => typeof n === "string") : [];
    }
  } catch {
    // no event log: nothing recorded
  }
  return [];
}
