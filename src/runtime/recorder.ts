/**
 * The episode recorder: appends events (unique ids, monotonic timestamps,
 * `caused_by` chains) and persists `state.json`, each persist followed by its
 * `run.state_projection` event. Everything goes through the episode's
 * {@link ArtifactSink}, which masks secrets in every value it writes.
 *
 * A projection carries `outcomes` and `links` as persisted, with one saving:
 * while the run is not terminal, `outcomes.actions` holds only the actions
 * recorded since the previous projection, `actions_from` is the index of its
 * first entry in `state.json` `outcomes.actions` and `actions_total` that
 * list's length. So the log grows with the number of actions, not with its
 * square, when the state is persisted after every action (an agent's hook
 * calls). The terminal projection carries every action (`actions_from` 0),
 * so it equals the final `state.json` as the contract requires.
 *
 * @module
 */
import { monotonicUlid } from "../store/ulid.ts";
import type { Faculty } from "../schema/event.ts";
import type { State } from "../schema/state.ts";
import { ARTIFACTS } from "../store/layout.ts";
import type { StagedFile } from "../store/atomic.ts";
import type { FileDigest } from "../store/hash.ts";
import { ArtifactSink } from "./artifact_sink.ts";
import { Redactor } from "./redact.ts";

/** Options of one emitted event. */
export interface EmitOptions {
  /** The faculty that produced it. */
  faculty?: Faculty;
  /** The causing event; `undefined` chains to the previous event, `null` leaves it out. */
  caused_by?: string | null;
  /** Timing of the work the event records. */
  metrics?: { started_at: string; completed_at: string; duration_ms: number };
  /** For runtime-phase events. */
  event_type?: string;
  /** The agent (default `noema`). */
  agent_id?: string;
  /** Ids of events the payload relies on. */
  evidence_ids?: string[];
  /** Use this timestamp (must not be earlier than the last one). */
  timestamp?: string;
  /** A list in the payload whose entries never change once written (action records; see `SharedOption`). */
  shared?: readonly unknown[];
}

/** An event as written. */
export interface WrittenEvent {
  id: string;
  timestamp: string;
  episode_id: string;
  agent_id: string;
  phase: string;
  faculty?: Faculty;
  event_type?: string;
  payload: Record<string, unknown>;
  evidence_ids: string[];
  caused_by?: string;
  metrics?: { started_at: string; completed_at: string; duration_ms: number };
}

/**
 * Appends events and persists state for one episode directory.
 *
 * @example
 * ```ts
 * import { Recorder } from "noema";
 * const rec = new Recorder("/tmp/ep", "ep_1");
 * const start = rec.emit("start", { task: "x" }, { caused_by: null });
 * rec.close();
 * ```
 */
export class Recorder {
  /** Where every artifact of the episode is written (secrets masked). */
  readonly sink: ArtifactSink;
  readonly #ulid = monotonicUlid();
  #lastMs = 0;
  #lastIso = "";
  /** Id of the last event written. */
  lastEventId: string | undefined;
  /** Number of events written by this recorder. */
  count = 0;
  /** Number of state persists. */
  persists = 0;
  /**
   * How many of `outcomes.actions` earlier projections carried (the next
   * projection starts there), or null when unknown (the next one carries all).
   */
  projectedActions: number | null = null;

  /** Events already in the log when this recorder opened it (a resumed run). */
  readonly baseCount: number;

  /** The episode directory (it may be renamed once, see {@link Recorder.moveTo}). */
  dir: string;

  /** Follows the episode directory after it was renamed (the open event log moves with it). */
  moveTo(dir: string): void {
    this.dir = dir;
    this.sink.moveTo(dir);
  }

  /**
   * `sink` writes the artifacts; without one, a sink that masks token
   * shapes and noema's own secrets (no named secrets).
   */
  constructor(
    dir: string,
    readonly episodeId: string,
    resume?: { count: number; lastEventId: string; lastTimestamp: string },
    sink?: ArtifactSink,
  ) {
    this.dir = dir;
    this.sink = sink ?? new ArtifactSink(dir, new Redactor());
    this.sink.moveTo(dir);
    this.sink.open(ARTIFACTS.events);
    this.baseCount = resume?.count ?? 0;
    if (resume) {
      this.lastEventId = resume.lastEventId;
      this.#lastMs = Date.parse(resume.lastTimestamp);
      this.#lastIso = resume.lastTimestamp;
    }
  }

  /** A timestamp no earlier than the previous one (ISO 8601, milliseconds, UTC). */
  now(): string {
    const ms = Date.now();
    if (ms > this.#lastMs) {
      this.#lastMs = ms;
      this.#lastIso = new Date(ms).toISOString();
    }
    return this.#lastIso;
  }

  /** Appends one event and returns it as written (secrets masked). */
  emit(phase: string, payload: Record<string, unknown>, options: EmitOptions = {}): WrittenEvent {
    const timestamp = options.timestamp ?? this.now();
    // Built in the contract's key order; optional keys are assigned, not spread (a spread costs a copy per event).
    const event = {
      id: `ev_${this.#ulid()}`,
      timestamp,
      episode_id: this.episodeId,
      agent_id: options.agent_id ?? "noema",
      phase,
    } as WrittenEvent;
    if (options.faculty) event.faculty = options.faculty;
    if (options.event_type) event.event_type = options.event_type;
    event.payload = payload;
    event.evidence_ids = options.evidence_ids ?? [];
    const causedBy = options.caused_by === undefined ? this.lastEventId : options.caused_by ?? undefined;
    if (causedBy !== undefined) event.caused_by = causedBy;
    if (options.metrics) event.metrics = options.metrics;
    const written = this.sink.appendJsonl(ARTIFACTS.events, event, { shared: options.shared });
    this.lastEventId = event.id;
    this.count++;
    return written;
  }

  /**
   * Writes `state.json` atomically, then its `run.state_projection` event
   * carrying `outcomes` and `links` as persisted (`outcomes.actions` from
   * `actions_from` on, unless `terminal`: see the module doc).
   */
  persistState(state: State, terminal = false): WrittenEvent {
    // The terminal state is durable (the log first); intermediate ones are atomic and rewritten at the next
    // persist, so they skip the fsyncs (the events stay the record of what happened).
    if (terminal) this.sink.sync(ARTIFACTS.events);
    this.sink.writeJson(ARTIFACTS.state, state, { durable: terminal, shared: state.outcomes?.actions });
    return this.#projection(state, terminal);
  }

  /**
   * The terminal `state.json`, staged (written under a temp name after the
   * log is synced, for `commitStaged` to rename into place). Its
   * `run.state_projection` event is written by {@link Recorder.projectTerminal}
   * once it is in place, so the last projection never describes a state.json
   * that a kill could leave unrenamed.
   */
  stageTerminalState(state: State): StagedFile {
    this.sink.sync(ARTIFACTS.events);
    return this.sink.stageJson(ARTIFACTS.state, state, { shared: state.outcomes?.actions });
  }

  /** The terminal `run.state_projection` event (every action), for a terminal `state.json` now in place. */
  projectTerminal(state: State): WrittenEvent {
    return this.#projection(state, true);
  }

  /** The `run.state_projection` event of a persisted state. */
  #projection(state: State, terminal: boolean): WrittenEvent {
    this.persists++;
    const outcomes = state.outcomes;
    const actions = outcomes?.actions;
    const payload: Record<string, unknown> = {
      kind: "run.state_projection",
      status: outcomes?.status,
      outcomes,
      links: state.links,
    };
    if (outcomes && actions) {
      const from = terminal || this.projectedActions === null || this.projectedActions > actions.length
        ? 0
        : this.projectedActions;
      if (from > 0) payload.outcomes = { ...outcomes, actions: actions.slice(from) };
      payload.actions_from = from;
      payload.actions_total = actions.length;
      this.projectedActions = actions.length;
    }
    // The action records were written (into state.json) just before: their texts are reused.
    const shared = (payload.outcomes as { actions?: unknown[] } | undefined)?.actions;
    return this.emit("runtime", payload, { event_type: "run.state_projection", shared });
  }

  /**
   * Writes the events still in memory (events are written in batches: see
   * {@link ArtifactSink.flush}). Called before an action runs, so the log
   * holds the decision before anything acts on it.
   */
  flush(): void {
    this.sink.flush();
  }

  /** Writes the events held in memory and starts flushing the log to disk in the background (sealing soon). */
  syncSoon(): void {
    this.sink.syncSoon(ARTIFACTS.events);
  }

  /** Flushes events to disk. */
  sync(): void {
    this.sink.sync(ARTIFACTS.events);
  }

  /** Size and `sha256:` of the event log as closed, when it was hashed as it was written (a long log), else null. */
  eventsDigest(): FileDigest | null {
    return this.sink.closedDigest(ARTIFACTS.events);
  }

  /** Flushes and closes the event log (and the sink's other open logs). */
  close(): void {
    this.sink.close();
  }
}
