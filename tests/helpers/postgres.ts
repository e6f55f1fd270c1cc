/**
 * A real PostgreSQL server for the tests: Debian's PostgreSQL 15 (`initdb` and
 * `pg_ctl`), on a temporary directory, listening on 127.0.0.1 at a free port.
 * No mock database. `initdb` refuses to run as root, so as root the server
 * runs as the `postgres` system user (`runuser -u postgres`), on a directory
 * that user owns.
 *
 * One server per test process: {@link startPostgres} returns the same server
 * to every caller, and each test asks it for a database of its own
 * ({@link PgServer.createDatabase}).
 *
 * @module
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import process from "node:process";

/** A running test server. */
export interface PgServer {
  /** `postgres://noema@127.0.0.1:<port>/postgres`. */
  url: string;
  /** The port. */
  port: number;
  /** A URL for a database of its own, created empty. */
  createDatabase(name?: string): string;
  /**
   * A login role that must give its password (SCRAM over 127.0.0.1, where every other role is trusted), owning a
   * database of its own; returns a URL for it without the password.
   */
  createPasswordRole(name: string, password: string): string;
  /**
   * The server's TLS (on 127.0.0.1; plain connections are served too): `ca` signed its certificate, whose only name
   * is `IP:127.0.0.1`; `otherCa` signed nothing the server shows.
   */
  tls: { ca: string; otherCa: string };
  /**
   * A login role that must show a client certificate (over TLS, where every other role is trusted), owning a
   * database of its own; returns a URL for it, and the certificate and key files it logs in with.
   */
  createCertRole(name: string): { url: string; cert: string; key: string };
  /** Runs SQL as the superuser `noema` in the database a URL of this server names (`psql -c`). */
  psql(url: string, command: string): void;
  /** Stops the server at once (`pg_ctl -m immediate`), as a crash would. */
  kill(): void;
  /** Starts it again on the same directory and port (a no-op while it runs). */
  restart(): void;
  /** Stops it and removes its directory. */
  stop(): void;
}

/** Where Debian's PostgreSQL binaries are, or null when it is not installed. */
export function pgBinDir(): string | null {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return null;
  const versions = readdirSync(base).filter((v) => existsSync(join(base, v, "bin", "initdb"))).sort();
  return versions.length ? join(base, versions[versions.length - 1], "bin") : null;
}

/** Why the PostgreSQL tests cannot run here (to skip them, saying so), or null. */
export function pgUnavailable(): string | null {
  return pgBinDir() === null ? "PostgreSQL is not installed (apt-get install postgresql)" : null;
}

/**
 * A TCP port on 127.0.0.1 that nothing listens on now, for a server to start on. Not for a service that is not
 * there: another test file's server may be given the port a moment later (use `REFUSED_PORT` of `local_http.ts`).
 *
 * @example
 * ```ts
 * import { freePort } from "./helpers/postgres.ts";
 * const port = await freePort(); // then start a server that must be told its port
 * ```
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

function asPg(cmd: string, args: string[]): void {
  const [file, argv] = isRoot ? ["runuser", ["-u", "postgres", "--", cmd, ...args]] : [cmd, args];
  const r = spawnSync(file, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${r.stderr || r.stdout || r.error}`);
}

/** openssl's arguments for a new key: EC P-256, unencrypted (fast to make). */
const EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

function openssl(args: string[]): void {
  const r = spawnSync("openssl", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  if (r.status !== 0) throw new Error(`openssl ${args.join(" ")} failed: ${r.stderr || r.error}`);
}

/**
 * A CA, a server certificate it signed for `IP:127.0.0.1` only, and a second CA, under `<dir>/tls` (EC keys: fast to
 * make). The server's key belongs to the user the server runs as, readable by it alone, as PostgreSQL demands.
 */
function certificates(dir: string): { dir: string; ca: string; otherCa: string } {
  const tls = join(dir, "tls");
  mkdirSync(tls);
  for (const name of ["ca", "other-ca"]) {
    openssl(["req", "-x509", ...EC_KEY, "-keyout", join(tls, `${name}.key`), "-out", join(tls, `${name}.crt`)]
      .concat(["-days", "2", "-subj", `/CN=noema test ${name}`]));
  }
  openssl(["req", "-new", ...EC_KEY, "-keyout", join(tls, "server.key"), "-out", join(tls, "server.csr")]
    .concat(["-subj", "/CN=noema test server"]));
  const ext = join(tls, "server.ext");
  writeFileSync(ext, "subjectAltName=IP:127.0.0.1\n");
  openssl(["x509", "-req", "-in", join(tls, "server.csr"), "-CA", join(tls, "ca.crt"), "-CAkey", join(tls, "ca.key")]
    .concat(["-CAcreateserial", "-out", join(tls, "server.crt"), "-days", "2", "-extfile", ext]));
  if (isRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString());
    for (const f of readdirSync(tls)) chownSync(join(tls, f), uid, -1);
    chownSync(tls, uid, -1);
  }
  chmodSync(join(tls, "server.key"), 0o600);
  return { dir: tls, ca: join(tls, "ca.crt"), otherCa: join(tls, "other-ca.crt") };
}

/** How {@link templateCluster} runs `initdb`: a new name when this changes, so an old template is not copied. */
const INITDB_ARGS = ["-A", "trust", "-U", "noema", "--no-sync", "-E", "UTF8"];

/**
 * A cluster `initdb` made once for every test process of this machine and user (`<tmpdir>/noema-pg-template-…`),
 * which each server copies (`cp -a`) instead of running `initdb` itself: `initdb` took about 0.9 s of CPU per test
 * process, the copy under 0.2 s. Never started itself, so never changed. Made in a directory of its own and renamed
 * into place whole, so a process that finds it finds all of it; two processes making it at once both succeed (the
 * second one's rename fails and its copy is removed). Null when it cannot be made (the server then runs `initdb`).
 */
function templateCluster(bin: string): string | null {
  const version = basename(dirname(bin));
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  const path = join(tmpdir(), `noema-pg-template-${version}-${uid}-v1`);
  if (existsSync(join(path, "PG_VERSION"))) return path;
  const making = mkdtempSync(`${path}.new-`);
  try {
    if (isRoot) chownSync(making, Number(execFileSync("id", ["-u", "postgres"]).toString()), -1);
    asPg(join(bin, "initdb"), ["-D", join(making, "data"), ...INITDB_ARGS]);
    try {
      renameSync(join(making, "data"), path);
    } catch { /* another test process made it first */ }
    return existsSync(join(path, "PG_VERSION")) ? path : null;
  } catch {
    return null;
  } finally {
    rmSync(making, { recursive: true, force: true });
  }
}

/** The data directory `data` made: a copy of the template cluster where there is one, else by `initdb`. */
function makeCluster(bin: string, data: string): void {
  const template = templateCluster(bin);
  if (template !== null) {
    // -a keeps the owner (the postgres user, as root) and the modes PostgreSQL demands (0700).
    const r = spawnSync("cp", ["-a", template, data], { stdio: "ignore" });
    if (r.status === 0) return;
    rmSync(data, { recursive: true, force: true });
  }
  asPg(join(bin, "initdb"), ["-D", data, ...INITDB_ARGS]);
}

let shared: Promise<PgServer> | undefined;

/**
 * Stops the server and removes its directory once the test process `pid` is gone, however it ended: a test runner
 * may end its workers without their `exit` handlers (a killed run, a worker torn down), which left servers running.
 * The loop runs in a subshell the `sh` forks and leaves: Bun gives the processes it spawns a parent-death signal,
 * which killed a watchdog together with its test worker, and a fork does not inherit it.
 */
function watchdog(pid: number, pgCtl: string, data: string, dir: string): void {
  const stopCmd = isRoot ? `runuser -u postgres -- '${pgCtl}'` : `'${pgCtl}'`;
  const script = `(while kill -0 ${pid} 2>/dev/null; do sleep 1; done; ` +
    `${stopCmd} -D '${data}' -m immediate -w stop; rm -rf '${dir}') >/dev/null 2>&1 &`;
  const child = spawn("sh", ["-c", script], { detached: true, stdio: "ignore" });
  child.on("error", () => {}); // no watchdog: the exit handler still stops it
  child.unref();
}

/**
 * Starts (once per process) a PostgreSQL server for the tests.
 *
 * @example
 * ```ts
 * import { startPostgres } from "./helpers/postgres.ts";
 * const pg = await startPostgres();
 * const url = pg.createDatabase();
 * ```
 */
export function startPostgres(): Promise<PgServer> {
  shared ??= boot();
  return shared;
}

async function boot(): Promise<PgServer> {
  const bin = pgBinDir();
  if (bin === null) throw new Error(pgUnavailable()!);
  const dir = mkdtempSync(join(tmpdir(), "noema-pg-"));
  if (isRoot) chownSync(dir, Number(execFileSync("id", ["-u", "postgres"]).toString()), -1);
  const data = join(dir, "data");
  makeCluster(bin, data);
  // Members of password_login log in with a password, members of cert_login with a client certificate over TLS (the
  // first matching line wins); every other role is trusted.
  const hba = join(data, "pg_hba.conf");
  writeFileSync(
    hba,
    "host all +password_login 127.0.0.1/32 scram-sha-256\n" +
      "hostssl all +cert_login 127.0.0.1/32 cert\nhost all +cert_login 127.0.0.1/32 reject\n" +
      readFileSync(hba, "utf8"),
  );
  const tls = certificates(dir);
  const port = await freePort();
  const start = () =>
    asPg(join(bin, "pg_ctl"), [
      "-D",
      data,
      "-l",
      join(dir, "log"),
      "-w",
      "-o",
      `-k ${dir} -p ${port} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 ` +
      `-c ssl=on -c ssl_cert_file=${tls.dir}/server.crt -c ssl_key_file=${tls.dir}/server.key ` +
      `-c ssl_ca_file=${tls.ca}`,
      "start",
    ]);
  const stopWith = (mode: string) => {
    try {
      asPg(join(bin, "pg_ctl"), ["-D", data, "-m", mode, "-w", "stop"]);
    } catch { /* already stopped */ }
  };
  start();
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    stopWith("immediate");
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", stop);
  watchdog(process.pid, join(bin, "pg_ctl"), data, dir);
  let n = 0;
  const url = `postgres://noema@127.0.0.1:${port}/postgres`;
  const newDatabase = () => `t${process.pid}_${++n}_${Date.now() % 100000}`;
  /** A login role in `group` (which pg_hba.conf says how to log in), owning a new database; a URL for it. */
  const roleWithDatabase = (name: string, group: string, options = "") => {
    const db = newDatabase();
    asPg(join(bin, "createdb"), ["-h", "127.0.0.1", "-p", String(port), "-U", "noema", db]);
    const sql = (command: string) =>
      asPg(join(bin, "psql"), ["-h", "127.0.0.1", "-p", String(port), "-U", "noema", "-d", db, "-q", "-c", command]);
    sql(`DO $$ BEGIN CREATE ROLE ${group} NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
    sql(`CREATE ROLE ${name} LOGIN ${options} IN ROLE ${group}`);
    sql(`ALTER DATABASE ${db} OWNER TO ${name}`);
    return `postgres://${name}@127.0.0.1:${port}/${db}`;
  };
  return {
    url,
    port,
    createDatabase(name = newDatabase()) {
      asPg(join(bin, "createdb"), ["-h", "127.0.0.1", "-p", String(port), "-U", "noema", name]);
      return `postgres://noema@127.0.0.1:${port}/${name}`;
    },
    createPasswordRole(name, password) {
      return roleWithDatabase(name, "password_login", `PASSWORD '${password}'`);
    },
    tls: { ca: tls.ca, otherCa: tls.otherCa },
    createCertRole(name) {
      const url = roleWithDatabase(name, "cert_login");
      const key = join(tls.dir, `${name}.key`), cert = join(tls.dir, `${name}.crt`), csr = join(tls.dir, `${name}.csr`);
      openssl(["req", "-new", ...EC_KEY, "-keyout", key, "-out", csr, "-subj", `/CN=${name}`]);
      openssl(["x509", "-req", "-in", csr, "-CA", tls.ca, "-CAkey", join(tls.dir, "ca.key"), "-CAcreateserial"]
        .concat(["-out", cert, "-days", "2"]));
      return { url, cert, key };
    },
    psql(dbUrl, command) {
      const db = decodeURIComponent(new URL(dbUrl).pathname.slice(1));
      asPg(join(bin, "psql"), ["-h", "127.0.0.1", "-p", String(port), "-U", "noema", "-d", db, "-q", "-c", command]);
    },
    kill: () => stopWith("immediate"),
    restart() {
      const running = spawnSync(isRoot ? "runuser" : join(bin, "pg_ctl"), [
        ...(isRoot ? ["-u", "postgres", "--", join(bin, "pg_ctl")] : []),
        "-D",
        data,
        "status",
      ]).status === 0;
      if (!running) start();
    },
    stop,
  };
}
