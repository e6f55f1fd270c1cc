/**
 * Node built-in modules that are loaded on first use rather than at start-up.
 *
 * In the compiled binary, every `node:` module imported anywhere in the code
 * is loaded when the executable starts, even by a module that is itself
 * loaded lazily (the bundle hoists them). Most cost nothing; these few cost
 * milliseconds each under Bun (`node:tls` ~9 ms, `node:readline` ~6 ms,
 * `node:tty` ~3 ms, `node:crypto` ~2 ms, `node:util` ~1.7 ms,
 * `node:worker_threads` ~1.2 ms, `node:timers` and `node:url` ~0.5 ms), more
 * than `noema summary` spends on its own work, and every hook call starts the
 * binary. So code that needs one gets it here, from
 * `process.getBuiltinModule` (Bun, Deno, Node ≥ 22.3), when it first runs.
 *
 * @module
 */
import process from "node:process";

type Tty = typeof import("node:tty");
type Crypto = typeof import("node:crypto");
type Util = typeof import("node:util");
type WorkerThreads = typeof import("node:worker_threads");
type Timers = typeof import("node:timers");
type Url = typeof import("node:url");
type Tls = typeof import("node:tls");
type Net = typeof import("node:net");
type Readline = typeof import("node:readline");
type Http = typeof import("node:http");

/** A getter of built-in module `name` that loads it on its first call. */
function onFirstUse<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => loaded ??= process.getBuiltinModule(name) as T;
}

/**
 * `node:tty`, loaded on first use.
 *
 * @example
 * ```ts
 * import { nodeTty } from "./builtins.ts";
 * nodeTty().isatty(1); // true on a terminal
 * ```
 */
export const nodeTty: () => Tty = onFirstUse("node:tty");

/**
 * `node:crypto`, loaded on first use.
 *
 * @example
 * ```ts
 * import { nodeCrypto } from "./builtins.ts";
 * nodeCrypto().createHash("sha256").update("x").digest("hex");
 * ```
 */
export const nodeCrypto: () => Crypto = onFirstUse("node:crypto");

/**
 * `node:util`, loaded on first use.
 *
 * @example
 * ```ts
 * import { nodeUtil } from "./builtins.ts";
 * nodeUtil().isDeepStrictEqual({ a: 1 }, { a: 1 }); // true
 * ```
 */
export const nodeUtil: () => Util = onFirstUse("node:util");

/**
 * `node:worker_threads`, loaded on first use.
 *
 * @example
 * ```ts
 * import { nodeWorkerThreads } from "./builtins.ts";
 * const { Worker } = nodeWorkerThreads();
 * ```
 */
export const nodeWorkerThreads: () => WorkerThreads = onFirstUse("node:worker_threads");

/**
 * `node:timers`, loaded on first use.
 *
 * @example
 * ```ts
 * import { nodeTimers } from "./builtins.ts";
 * nodeTimers().setImmediate(() => console.log("next turn"));
 * ```
 */
export const nodeTimers: () => Timers = onFirstUse("node:timers");

/**
 * `node:url`, loaded on first use.
 *
 * @example
 * ```ts
 * import { nodeUrl } from "./builtins.ts";
 * nodeUrl().pathToFileURL("/tmp/x.ts").href; // "file:///tmp/x.ts"
 * ```
 */
export const nodeUrl: () => Url = onFirstUse("node:url");

/**
 * `node:tls`, loaded on first use.
 *
 * @example
 * ```ts
 * import { nodeTls } from "./builtins.ts";
 * nodeTls().checkServerIdentity("db.internal", { subject: {}, subjectaltname: "DNS:db.internal" } as never);
 * ```
 */
export const nodeTls: () => Tls = onFirstUse("node:tls");

/**
 * `node:net`, loaded on first use.
 *
 * @example
 * ```ts
 * import { nodeNet } from "./builtins.ts";
 * nodeNet().isIP("127.0.0.1"); // 4
 * ```
 */
export const nodeNet: () => Net = onFirstUse("node:net");

/**
 * `node:readline`, loaded on first use.
 *
 * @example
 * ```ts
 * import process from "node:process";
 * import { nodeReadline } from "./builtins.ts";
 * nodeReadline().createInterface({ input: process.stdin }).on("line", (line) => console.log(line));
 * ```
 */
export const nodeReadline: () => Readline = onFirstUse("node:readline");

/**
 * `node:http`, loaded on first use.
 *
 * @example
 * ```ts
 * import { nodeHttp } from "./builtins.ts";
 * const server = nodeHttp().createServer((_req, res) => res.end("ok"));
 * server.listen(0, "127.0.0.1", () => server.close());
 * ```
 */
export const nodeHttp: () => Http = onFirstUse("node:http");
