/**
 * The table of runners of a command in an environment of theirs (`runners.ts` reads it): package runners, version
 * managers, secret and environment loaders, containers and virtual machines, remote shells. Each runner is named by
 * its program, or `program subcommand…` (`docker compose exec`), with how its words give the command away.
 *
 * @module
 */

/** How a runner's words give its command away. */
export interface Runner {
  /** Its options that take a value (the next word, unless given as `--opt=value` or `-Xvalue`). */
  values: RegExp;
  /** Its options that take two values (`--bind SRC DEST`). */
  pairs?: RegExp;
  /** Words after its options before its command: the directory, container, image, pod, profile. */
  positionals?: number;
  /** Options whose value is a script (`npx -c 'git push'`, `vagrant ssh -c '…'`). */
  script?: RegExp;
  /** Flags that make it run its command words through a shell (`pnpm exec -c git push`). */
  shell?: RegExp;
  /** The word its command follows (`nix develop -c git push`, `kubectl run x -- git push`); none runs without it. */
  commandAfter?: RegExp;
  /** With `commandAfter`: without that word, the words after its options are the command (`lxc exec c git push`). */
  orWords?: true;
  /** Its command words are a script, joined and read as a command line (`bun exec 'git push'`, `heroku run …`). */
  scriptWords?: true;
  /** Its script option may follow its positional (`vagrant ssh default -c '…'`): every word up to `--` is read. */
  interspersed?: true;
}

const NONE = /^$/;
const NPM =
  /^(-p|--package|-w|--workspace|--prefix|--userconfig|--cache|--registry|--loglevel|--node-options|--script-shell|-c|--call)$/;
const UV =
  /^(--with|--with-editable|--with-requirements|--from|--python|-p|--package|--extra|--group|--only-group|--no-group|--env-file|--directory|--project|--index|--default-index|--index-url|--extra-index-url|-i|--find-links|-f|--cache-dir|--config-file|--color|-C|--config-setting)$/;
const CONDA = /^(-n|--name|-p|--prefix|--cwd)$/;
const CONTAINER_EXEC = /^(-e|--env|--env-file|-u|--user|-w|--workdir|--detach-keys|--index)$/;
const CONTAINER_RUN =
  /^(-e|--env|--env-file|-u|--user|-w|--workdir|-v|--volume|-p|--publish|--name|--network|--net|--entrypoint|-l|--label|--mount|--platform|-h|--hostname|--add-host|--cpus|-m|--memory|--device|--cap-add|--cap-drop|--security-opt|--ulimit|--restart|--pull|--tmpfs|--log-driver|--log-opt|--gpus|--ipc|--pid|--userns|--dns|--stop-signal|--shm-size|--runtime|--cidfile|--link|--expose|--group-add|--health-cmd|--volumes-from|--label-file|--cgroupns|--uts)$/;
const NIX_COMMAND = /^(-c|--command|--profile|--override-input|-I|--expr|--file|-f)$/;
const NIX_PAIRS = /^(--option|--arg|--argstr|--override-flake)$/;
const KUBECTL =
  /^(-c|--container|-n|--namespace|--context|-f|--filename|--pod-running-timeout|--kubeconfig|--cluster|--user|-s|--server|--token|--image|--image-pull-policy|--env|--labels|-l|--overrides|--port|--restart|--serviceaccount|--target|--profile|--copy-to|--share-processes|--set-image|--as|--as-group|--request-timeout)$/;
const MISE = /^(-C|--cd|-j|--jobs|-c|--command|-E|--env)$/;
const DASH_DASH = /^--$/;
const FLY = /^(-a|--app|-C|--command|-s|--select|-u|--user|-r|--region)$/;

/** The runners, by name: the program, or the program and its subcommand words. */
export const RUNNERS: Record<string, Runner> = {
  // Package runners.
  npx: { values: NPM, script: /^(-c|--call)$/ },
  "npm exec": { values: NPM, script: /^(-c|--call)$/ },
  "npm x": { values: NPM, script: /^(-c|--call)$/ },
  bunx: { values: /^(-p|--package)$/ },
  "bun x": { values: /^(-p|--package)$/ },
  "bun run": { values: /^(--cwd|-F|--filter|--elide-lines|--shell|-c|--config|--env-file|-r|--preload)$/ },
  "bun exec": { values: NONE, scriptWords: true },
  pnpx: { values: /^(-C|--dir|--package|--reporter|--allow-build)$/, shell: /^(-c|--shell-mode)$/ },
  "pnpm exec": {
    values: /^(-C|--dir|--filter|-F|--reporter|--workspace-concurrency|--resume-from|--report-summary)$/,
    shell: /^(-c|--shell-mode)$/,
  },
  "pnpm dlx": { values: /^(-C|--dir|--package|--reporter|--allow-build)$/, shell: /^(-c|--shell-mode)$/ },
  "yarn exec": { values: /^--cwd$/ },
  "yarn dlx": { values: /^(-p|--package)$/ },
  uvx: { values: UV },
  "uv run": { values: UV },
  "poetry run": { values: /^(-C|--directory|-P|--project)$/ },
  "pipenv run": { values: NONE },
  "pdm run": { values: /^(-p|--project|-L|--lockfile|--venv)$/ },
  "hatch run": { values: NONE },
  "rye run": { values: /^--pyproject$/ },
  "pixi run": { values: /^(--manifest-path|-e|--environment|--color)$/ },
  "pixi exec": { values: /^(-s|--spec|-c|--channel|--platform)$/ },
  "conda run": { values: CONDA },
  "mamba run": { values: CONDA },
  "micromamba run": { values: CONDA },
  "bundle exec": { values: /^--gemfile$/ },
  "stack exec": { values: /^(--package|--cwd|--stack-yaml|--resolver)$/ },
  "cabal exec": { values: /^(--project-file|--builddir)$/ },
  "dune exec": { values: /^(--root|--context|--profile|--build-dir)$/ },
  "opam exec": { values: /^(--switch|--root|--set-switch)$/ },
  // Version managers and environments.
  "mise exec": { values: MISE, script: /^(-c|--command)$/, commandAfter: DASH_DASH, orWords: true },
  "mise x": { values: MISE, script: /^(-c|--command)$/, commandAfter: DASH_DASH, orWords: true },
  "rtx exec": { values: MISE, script: /^(-c|--command)$/, commandAfter: DASH_DASH, orWords: true },
  "rtx x": { values: MISE, script: /^(-c|--command)$/, commandAfter: DASH_DASH, orWords: true },
  "asdf exec": { values: NONE },
  "rbenv exec": { values: NONE },
  "pyenv exec": { values: NONE },
  "nodenv exec": { values: NONE },
  "goenv exec": { values: NONE },
  "jenv exec": { values: NONE },
  "plenv exec": { values: NONE },
  "fnm exec": { values: /^(--using|--log-level|--fnm-dir|--node-dist-mirror)$/ },
  "volta run": { values: /^(--node|--npm|--yarn|--pnpm|--env)$/ },
  // `nvm exec [VERSION] COMMAND`: the version is optional (a deny rule also reads the word as the command).
  "nvm exec": { values: NONE, positionals: 1 },
  "devbox run": { values: /^(-c|--config|-e|--env|--env-file)$/ },
  "flox activate": {
    values: /^(-d|--dir|-r|--remote|-m|--mode)$/,
    script: /^(-c|--command)$/,
    commandAfter: DASH_DASH,
  },
  "guix shell": {
    values: /^(-m|--manifest|-f|--file|-e|--expression|-p|--profile|-r|--root)$/,
    commandAfter: DASH_DASH,
  },
  // `scl enable COLLECTION… 'COMMAND'` (its last word, a script), or `scl enable COLLECTION… -- COMMAND…`.
  "scl enable": { values: NONE, commandAfter: DASH_DASH },
  "direnv exec": { values: NONE, positionals: 1 },
  "nix develop": { values: NIX_COMMAND, pairs: NIX_PAIRS, commandAfter: /^(-c|--command)$/ },
  "nix shell": { values: NIX_COMMAND, pairs: NIX_PAIRS, commandAfter: /^(-c|--command)$/ },
  "nix-shell": {
    values: /^(-p|--packages|-I|-A|--attr|--run|--command)$/,
    pairs: NIX_PAIRS,
    script: /^(--run|--command)$/,
  },
  // Secret and environment loaders.
  dotenv: { values: /^(-e|-v|-c|-p)$/ },
  "cross-env": { values: NONE },
  "env-cmd": { values: /^(-f|--file|-r|--rc-file|-e|--environments)$/ },
  "dotenvx run": { values: /^(-f|--env-file|-e|--env|--convention|-fk|--env-keys-file|--ops-off)$/ },
  "op run": { values: /^(--env-file|--account|--config|--session|--cache)$/ },
  "doppler run": {
    values:
      /^(-p|--project|-c|--config|--token|--fallback|--mount|--mount-format|--mount-template|--name-transformer|--scope|--api-host|--configuration|--command)$/,
    script: /^--command$/,
  },
  "infisical run": {
    values: /^(--env|--path|--projectId|--token|--tags|--domain|--command|--watch-interval|--project-config-dir)$/,
    script: /^--command$/,
  },
  "aws-vault exec": {
    values: /^(-d|--duration|--region|-m|--mfa-token|-t|--prompt|--backend|--ec2-server|--ecs-server)$/,
    positionals: 1,
  },
  "chamber exec": { values: /^(--pristine|--strict-value)$/, commandAfter: DASH_DASH },
  "teller run": { values: /^(-c|--config)$/ },
  "berglas exec": { values: /^(--local|--project)$/ },
  "saml2aws exec": { values: /^(-a|--idp-account|--exec-profile|-p|--profile|--region)$/ },
  "sops exec-env": { values: /^(--user|--input-type|--output-type)$/, positionals: 1, scriptWords: true },
  "sops exec-file": { values: /^(--user|--input-type|--output-type|--filename)$/, positionals: 1, scriptWords: true },
  summon: { values: /^(-p|--provider|-f|-D|--yaml|--up)$/ },
  envchain: { values: NONE, positionals: 1 },
  // Containers, virtual machines and remote shells.
  "docker exec": { values: CONTAINER_EXEC, positionals: 1 },
  "docker run": { values: CONTAINER_RUN, positionals: 1 },
  "docker container exec": { values: CONTAINER_EXEC, positionals: 1 },
  "docker container run": { values: CONTAINER_RUN, positionals: 1 },
  "docker compose exec": { values: CONTAINER_EXEC, positionals: 1 },
  "docker compose run": { values: CONTAINER_RUN, positionals: 1 },
  "docker-compose exec": { values: CONTAINER_EXEC, positionals: 1 },
  "docker-compose run": { values: CONTAINER_RUN, positionals: 1 },
  "podman exec": { values: CONTAINER_EXEC, positionals: 1 },
  "podman run": { values: CONTAINER_RUN, positionals: 1 },
  "podman container exec": { values: CONTAINER_EXEC, positionals: 1 },
  "podman container run": { values: CONTAINER_RUN, positionals: 1 },
  "podman-compose exec": { values: CONTAINER_EXEC, positionals: 1 },
  "podman-compose run": { values: CONTAINER_RUN, positionals: 1 },
  "nerdctl exec": { values: CONTAINER_EXEC, positionals: 1 },
  "nerdctl run": { values: CONTAINER_RUN, positionals: 1 },
  "nerdctl compose exec": { values: CONTAINER_EXEC, positionals: 1 },
  "nerdctl compose run": { values: CONTAINER_RUN, positionals: 1 },
  // The pod, then options; the command is what follows `--` (`kubectl exec POD CMD` in old versions).
  "kubectl exec": { values: KUBECTL, positionals: 1, commandAfter: DASH_DASH, orWords: true },
  "kubectl run": { values: KUBECTL, commandAfter: DASH_DASH },
  "kubectl debug": { values: KUBECTL, commandAfter: DASH_DASH },
  "oc exec": { values: KUBECTL, positionals: 1, commandAfter: DASH_DASH, orWords: true },
  "oc rsh": { values: KUBECTL, positionals: 1 },
  "lxc exec": {
    values: /^(--env|--cwd|--user|--group|--mode)$/,
    positionals: 1,
    commandAfter: DASH_DASH,
    orWords: true,
  },
  "incus exec": {
    values: /^(--env|--cwd|--user|--group|--mode)$/,
    positionals: 1,
    commandAfter: DASH_DASH,
    orWords: true,
  },
  "multipass exec": { values: /^(-d|--working-directory)$/, positionals: 1 },
  "limactl shell": { values: /^(--workdir|--shell)$/, positionals: 1 },
  "machinectl shell": { values: /^(-E|--setenv|--uid)$/, positionals: 1 },
  "distrobox enter": { values: /^(-n|--name|-a|--additional-flags)$/, commandAfter: /^(--|-e|--exec)$/ },
  "distrobox-enter": { values: /^(-n|--name|-a|--additional-flags)$/, commandAfter: /^(--|-e|--exec)$/ },
  "toolbox run": { values: /^(-c|--container|-d|--distro|-r|--release)$/ },
  "heroku run": { values: /^(-a|--app|-r|--remote|-s|--size|-e|--env|--type)$/, scriptWords: true },
  "vagrant ssh": { values: /^(-c|--command)$/, script: /^(-c|--command)$/, interspersed: true },
  "fly ssh console": { values: FLY, script: /^(-C|--command)$/, interspersed: true },
  "flyctl ssh console": { values: FLY, script: /^(-C|--command)$/, interspersed: true },
  "gcloud compute ssh": {
    values: /^(--command|--zone|--project|--ssh-flag)$/,
    script: /^--command$/,
    commandAfter: DASH_DASH,
    interspersed: true,
  },
  "gh codespace ssh": { values: /^(-c|--codespace|-R|--repo|--profile|--config)$/, commandAfter: DASH_DASH },
  // Watchers that run a command when files change.
  watchexec: {
    values:
      /^(-w|--watch|-W|--watch-non-recursive|-F|--watch-file|-e|--exts|-f|--filter|-i|--ignore|--ignore-file|-d|--debounce|--delay-run|-s|--signal|--stop-signal|--stop-timeout|--shell|-E|--env|--workdir|--on-busy-update|-o|--project-origin|--poll|--filter-file|-j|--filter-prog|--emit-events-to|--log-file|--color|--socket|--timeout|--wrap-process|--print-events)$/,
    scriptWords: true,
  },
  nodemon: {
    values: /^(-x|--exec|-w|--watch|-e|--ext|-i|--ignore|-d|--delay|--signal|--config|-C)$/,
    script: /^(-x|--exec)$/,
  },
  // `entr [-acdnprz] COMMAND…`; `-s` runs it through a shell.
  entr: { values: NONE, shell: /^-[acdnprz]*s[acdnprz]*$/ },
  // A session manager that runs its command (`screen -X` is read in runners.ts).
  screen: { values: /^(-c|-e|-h|-p|-S|-t|-T|-s|-Logfile)$/ },
};

/**
 * The options a program (or a program and its subcommand words) takes before the next subcommand word, that take a
 * value (`docker -H HOST exec`, `kubectl -n NS exec`, `docker compose -f FILE exec`); unknown options are flags.
 */
export const RUNNER_GLOBALS: Record<string, RegExp> = {
  docker: /^(-H|--host|-c|--context|--config|-l|--log-level|--tlscacert|--tlscert|--tlskey)$/,
  podman: /^(--url|-c|--connection|--root|--runroot|--log-level|--cgroup-manager|--storage-driver|--identity)$/,
  nerdctl: /^(-n|--namespace|-a|--address|--host|--snapshotter|--cgroup-manager)$/,
  kubectl: /^(-n|--namespace|--context|--kubeconfig|--cluster|--user|-s|--server|--token|--as|--as-group|-v|--v)$/,
  oc: /^(-n|--namespace|--context|--kubeconfig|--cluster|--user|-s|--server|--token|--as|-v|--v)$/,
  "docker compose": /^(-f|--file|-p|--project-name|--profile|--project-directory|--env-file|--ansi|--parallel)$/,
  "docker-compose": /^(-f|--file|-p|--project-name|--profile|--project-directory|--env-file|--ansi|--parallel)$/,
  "podman-compose": /^(-f|--file|-p|--project-name|--profile|--podman-path|--env-file)$/,
  "nerdctl compose": /^(-f|--file|-p|--project-name|--profile|--project-directory|--env-file)$/,
  npm: /^(--prefix|-w|--workspace|--userconfig|--cache|--registry|--loglevel)$/,
  pnpm: /^(-C|--dir|--filter|-F|--reporter|--workspace-concurrency|--resume-from|--report-summary)$/,
  yarn: /^(--cwd)$/,
  bun: /^(--cwd|-c|--config|--env-file|-r|--preload)$/,
  uv: /^(--directory|--project|--cache-dir|--config-file|--color)$/,
  poetry: /^(-C|--directory|-P|--project)$/,
  pixi: /^(--color)$/,
  hatch: /^(-e|--env|-p|--project|--data-dir|--cache-dir|--config|--color)$/,
  mise: /^(-C|--cd|-E|--env|-j|--jobs)$/,
  nix: /^(--extra-experimental-features|--experimental-features|--store|--log-format)$/,
  lxc: /^(--project|--remote)$/,
  incus: /^(--project|--remote)$/,
  multipass: NONE,
  gcloud: /^(--project|--account|--configuration|--verbosity|--format)$/,
  gh: /^(-R|--repo)$/,
  fly: /^(-a|--app|-t|--access-token)$/,
  flyctl: /^(-a|--app|-t|--access-token)$/,
  heroku: NONE,
};

/**
 * pnpm's own commands: any other first word is a script of the project, or a command pnpm runs as `pnpm exec` does
 * (`pnpm eslint .`, pnpm 6.6 on).
 */
export const PNPM_COMMANDS: ReadonlySet<string> = new Set(
  ("add i install it install-test update up upgrade remove rm uninstall un unlink link ln import rebuild rb prune " +
    "fetch patch patch-commit patch-remove audit list ls ll la outdated why licenses run run-script test t tst " +
    "start restart stop exec dlx create publish pack recursive multi m server store root bin setup init deploy " +
    "doctor config c get set env cat-file cat-index find-hash self-update approve-builds ignored-builds help " +
    "completion login logout whoami owner dist-tag view info show search cache dedupe version catalog sbom")
    .split(" "),
);
