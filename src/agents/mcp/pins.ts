/**
 * Tool pins of `noema mcp`: each MCP server's tools, pinned by digest at
 * first sight (the sha256 of the canonical JSON of what a client is shown of
 * the tool: its description, input and output schemas, title and
 * annotations), in `<root>/mcp/pins/<server>.json`. A tool the server
 * later lists with another digest is *changed*: the new digest is kept as
 * `changed`, beside the pinned one, and the gateway blocks the tool (a
 * `tool_changed` veto) until someone accepts it (`noema mcp pins --accept
 * SERVER TOOL`), which pins the new digest. A server that changes a tool's
 * description after it was trusted (a "rug pull") thus cannot slip it past.
 *
 * Every read-modify-write holds the pins directory's lock, and the file is
 * written atomically, so gateways of several sessions and the CLI share it.
 *
 * @module
 */
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { EXIT, NoemaError } from "../../errors.ts";
import { writeJsonAtomic } from "../../store/atomic.ts";
import { canonicalHash } from "../../store/hash.ts";
import { readJsonFile } from "../../store/json_file.ts";
import { acquireLock } from "../../store/lock.ts";
import { ownEntry } from "../../json.ts";

/** One pinned tool. */
export interface ToolPin {
  /**
   * `sha256:<hex>` of the canonical JSON of `{description, inputSchema, outputSchema, title, annotations}` as first
   * seen (or as last accepted); a pin written before the digest covered more than `{description, inputSchema}` has
   * `sha256:sha256:<hex>` of those two, and is pinned whole at its next sight when they are unchanged.
   */
  digest: string;
  /** When it was pinned (first seen, or accepted). */
  pinned_at: string;
  /** The pinned description, for people comparing it with a change. */
  description: string | null;
  /** The digest the server lists now when it differs from the pinned one: the tool is blocked. */
  changed?: { digest: string; seen_at: string; description: string | null };
}

/** A server's pins file. */
export interface PinsFile {
  schema_version: "mcp_pins/1.0";
  server: string;
  tools: Record<string, ToolPin>;
}

/** A tool as `tools/list` gives it (the fields the pins read). */
export interface ListedTool {
  name: string;
  description?: string;
  inputSchema?: unknown;
  outputSchema?: unknown;
  title?: unknown;
  annotations?: unknown;
}

/** A server name usable in a tool's rule name `mcp__<server>__<tool>` and as a file name. */
export const SERVER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The directory of the pins files under a root.
 *
 * @example
 * ```ts
 * import { pinsDir } from "./pins.ts";
 * pinsDir("/w/.noema"); // "/w/.noema/mcp/pins"
 * ```
 */
export function pinsDir(root: string): string {
  return join(root, "mcp", "pins");
}

function pinsPath(root: string, server: string): string {
  if (!SERVER_NAME.test(server)) {
    throw new NoemaError("usage", `bad MCP server name ${JSON.stringify(server)}: letters, digits, _ and - only`, {
      exitCode: EXIT.USAGE,
    });
  }
  return join(pinsDir(root), `${server}.json`);
}

/**
 * The digest a tool is pinned by: what a client is shown of it, its description, input and output schemas, title
 * and annotations (a client may show the title to the person who approves a call, or run a tool it is told is
 * read-only without asking).
 *
 * @example
 * ```ts
 * import { toolDigest } from "./pins.ts";
 * toolDigest({ name: "echo", description: "Echo", inputSchema: { type: "object" } }); // "sha256:…"
 * ```
 */
export function toolDigest(tool: ListedTool): string {
  return canonicalHash({
    description: tool.description ?? null,
    inputSchema: tool.inputSchema ?? null,
    outputSchema: tool.outputSchema ?? null,
    title: tool.title ?? null,
    annotations: tool.annotations ?? null,
  });
}

/** The digest of pins written before {@link toolDigest} covered more than the description and input schema. */
function legacyDigest(tool: ListedTool): string {
  return `sha256:${canonicalHash({ description: tool.description ?? null, inputSchema: tool.inputSchema ?? null })}`;
}
const LEGACY = "sha256:sha256:";

/**
 * A server's pins (none yet: an empty set). A damaged file is an error naming it.
 *
 * @example
 * ```ts
 * import { readPins } from "./pins.ts";
 * Object.keys(readPins(".noema", "fs").tools); // ["read_file", "write_file"]
 * ```
 */
export function readPins(root: string, server: string): PinsFile {
  const path = pinsPath(root, server);
  if (!existsSync(path)) return { schema_version: "mcp_pins/1.0", server, tools: toolTable({}) };
  const value = readJsonFile(path) as Partial<PinsFile>;
  if (value.schema_version !== "mcp_pins/1.0" || typeof value.tools !== "object" || value.tools === null) {
    throw new NoemaError("bad_pins", "not an MCP pins file (schema_version mcp_pins/1.0, tools)", {
      file: path,
      exitCode: EXIT.USAGE,
    });
  }
  return { ...value, tools: toolTable(value.tools) } as PinsFile;
}

/**
 * The pins by tool name, in an object with no prototype: a tool the server names `__proto__` is pinned like any
 * other (set on a plain object, it set the object's prototype, was never written, and was first seen at every
 * listing: never blocked, whatever its description became).
 */
function toolTable(tools: Record<string, ToolPin>): Record<string, ToolPin> {
  return Object.assign(Object.create(null), tools);
}

/**
 * The servers that have a pins file under `root`, sorted.
 *
 * @example
 * ```ts
 * import { pinnedServers } from "./pins.ts";
 * pinnedServers(".noema"); // ["fs", "github"]
 * ```
 */
export function pinnedServers(root: string): string[] {
  const dir = pinsDir(root);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5))
    .filter((s) => SERVER_NAME.test(s)).sort();
}

/** Runs `change` on the server's pins under the pins lock and writes them atomically when it says so. */
function updatePins<T>(root: string, server: string, change: (pins: PinsFile) => { write: boolean; value: T }): T {
  const path = pinsPath(root, server);
  mkdirSync(pinsDir(root), { recursive: true, mode: 0o700 });
  const lock = acquireLock(pinsDir(root), "mcp-pins", { waitMs: 5000 });
  try {
    const pins = readPins(root, server);
    const r = change(pins);
    if (r.write) writeJsonAtomic(path, pins);
    return r.value;
  } finally {
    lock.release();
  }
}

/**
 * Pins the listed tools seen for the first time, notes those listed with
 * another digest than their pin (and forgets such a note when the tool is
 * back to its pin). Returns the names of the tools that are changed.
 *
 * @example
 * ```ts
 * import { observeTools } from "./pins.ts";
 * observeTools(".noema", "fs", [{ name: "write_file", description: "Write a file", inputSchema: {} }]); // []
 * ```
 */
export function observeTools(root: string, server: string, tools: readonly ListedTool[]): string[] {
  return updatePins(root, server, (pins) => {
    const now = new Date().toISOString();
    let write = false;
    const changed: string[] = [];
    for (const tool of tools) {
      if (typeof tool?.name !== "string") continue;
      const digest = toolDigest(tool);
      const description = typeof tool.description === "string" ? tool.description : null;
      const pin = ownEntry(pins.tools, tool.name);
      if (!pin) {
        pins.tools[tool.name] = { digest, pinned_at: now, description };
        write = true;
      } else if (pin.digest.startsWith(LEGACY) && pin.digest === legacyDigest(tool)) {
        // Pinned by its description and input schema alone, both unchanged: now pinned whole, as it is listed.
        pins.tools[tool.name] = { digest, pinned_at: pin.pinned_at, description: pin.description };
        write = true;
      } else if (pin.digest === digest) {
        if (pin.changed) {
          delete pin.changed;
          write = true;
        }
      } else {
        changed.push(tool.name);
        if (pin.changed?.digest !== digest) {
          pin.changed = { digest, seen_at: now, description };
          write = true;
        }
      }
    }
    return { write, value: changed };
  });
}

/**
 * Accepts a changed tool: its new digest becomes the pin. An unknown server
 * or tool, or a tool that is not changed, is a usage error.
 *
 * @example
 * ```ts
 * import { acceptTool } from "./pins.ts";
 * acceptTool(".noema", "fs", "write_file").digest; // the new pin
 * ```
 */
export function acceptTool(root: string, server: string, tool: string): ToolPin {
  return updatePins(root, server, (pins) => {
    const pin = ownEntry(pins.tools, tool);
    if (!pin) {
      throw new NoemaError("not_found", `MCP server ${server} has no pinned tool ${JSON.stringify(tool)}`, {
        file: pinsPath(root, server),
        exitCode: EXIT.USAGE,
      });
    }
    if (!pin.changed) {
      throw new NoemaError("not_changed", `${server} ${tool} is not changed: nothing to accept`, {
        file: pinsPath(root, server),
        exitCode: EXIT.USAGE,
      });
    }
    const accepted: ToolPin = {
      digest: pin.changed.digest,
      pinned_at: new Date().toISOString(),
      description: pin.changed.description,
    };
    pins.tools[tool] = accepted;
    return { write: true, value: accepted };
  });
}

/**
 * Whether a tool is blocked: the server listed it with a digest that is not
 * its pin (the pin as stored now: an accepted change unblocks it at once).
 * `seen` is the digest this session listed; unknown (the client called a
 * tool it never listed), the pins file's own note decides.
 *
 * @example
 * ```ts
 * import { changedTool } from "./pins.ts";
 * changedTool(".noema", "fs", "write_file", "sha256:…"); // null, or the pin it differs from
 * ```
 */
export function changedTool(root: string, server: string, tool: string, seen: string | undefined): ToolPin | null {
  const pins = readPins(root, server);
  const pin = ownEntry(pins.tools, tool);
  if (!pin) return null;
  if (seen === undefined) return pin.changed ? pin : null;
  return pin.digest === seen ? null : pin;
}
