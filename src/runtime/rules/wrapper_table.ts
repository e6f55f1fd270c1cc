/**
 * The table of wrappers `wrappers.ts` peels: programs that run the command after their own options and positionals
 * (`nice -n 5 git push`, `timeout 5 git push`, `bwrap --ro-bind / / git push`), with the options of each that take
 * values. The runners of `runner_table.ts` join it under their names (`npm exec`).
 *
 * @module
 */
import { RUNNER_OPTIONS, RUNNER_PAIRS, RUNNER_POSITIONALS } from "./runners.ts";

/** Options of a wrapper that take a value (the next word, unless given as `--opt=value` or `-Xvalue`). */
export const VALUE_OPTIONS: Record<string, RegExp> = {
  command: /^$/,
  builtin: /^$/,
  exec: /^-a$/,
  nice: /^(-n|--adjustment)$/,
  nohup: /^$/,
  time: /^(-f|--format|-o|--output)$/,
  timeout: /^(-s|--signal|-k|--kill-after)$/,
  stdbuf: /^(-i|-o|-e|--input|--output|--error)$/,
  setsid: /^$/,
  ionice: /^(-c|--class|-n|--classdata|-p|--pid|-P|--pgid|-u|--uid)$/,
  sudo:
    /^(-u|--user|-g|--group|-h|--host|-p|--prompt|-C|--close-from|-D|--chdir|-r|--role|-t|--type|-U|--other-user|-T|--command-timeout)$/,
  doas: /^(-u|-C)$/,
  xargs:
    /^(-I|-L|-n|-P|-s|-d|-E|-a|--arg-file|--delimiter|--max-args|--max-lines|--max-procs|--max-chars|--replace|--eof|--process-slot-var)$/,
  flock: /^(-w|--timeout|-E|--conflict-exit-code)$/,
  watch: /^(-n|--interval|-d|--differences|-q|--equexit)$/,
  strace: /^(-e|-o|-s|-p|-u|-a|-b|-E|-I|-O|-P|-S|-X)$/,
  taskset: /^$/,
  chrt: /^$/,
  unbuffer: /^$/,
  chroot: /^(--userspec|--groups)$/,
  unshare:
    /^(-S|--setuid|-G|--setgid|-R|--root|-w|--wd|--propagation|--setgroups|--map-user|--map-group|--map-users|--map-groups)$/,
  ssh: /^-[bcDEeFIiJLlmOopPQRSWwB]$/, // -P TAG: OpenSSH 9.2
  // Less common runners of the command after their options.
  runuser: /^(-u|--user|-g|--group|-G|--supp-group|-s|--shell|-w|--whitelist-environment)$/,
  setpriv:
    /^(--reuid|--regid|--ruid|--rgid|--euid|--egid|--groups|--inh-caps|--ambient-caps|--bounding-set|--securebits|--pdeathsig|--selinux-label|--apparmor-profile|--landlock-access|--landlock-rule|--reset-env)$/,
  prlimit: /^(-p|--pid|-o|--output)$/,
  nsenter: /^(-t|--target|-S|--setuid|-G|--setgid|--user-parent)$/,
  fakeroot: /^(-l|--lib|--faked|-s|-i|-b)$/,
  faketime: /^(-p|--date-prog)$/,
  torsocks: /^(-u|-p|-a|-P|--user|--pass|--address|--port)$/,
  proxychains: /^-f$/,
  proxychains4: /^-f$/,
  valgrind: /^$/,
  ltrace: /^(-o|--output|-e|-p|-s|-a|--align|-u|-D|--debug|-F|--config|-A|-l|--library|-L|-x|-w|--where|-X)$/,
  catchsegv: /^$/,
  "systemd-run":
    /^(-p|--property|-u|--unit|-E|--setenv|-H|--host|-M|--machine|--uid|--gid|--nice|-D|--working-directory|--slice|--description|--on-calendar|--on-active|--timer-property|--path-property|--socket-property|--service-type)$/,
  pkexec: /^--user$/,
  "xvfb-run": /^(-n|--server-num|-s|--server-args|-e|--error-file|-f|--auth-file|-p|--xauth-protocol|-w|--wait)$/,
  "dbus-launch": /^$/,
  eatmydata: /^$/,
  nocache: /^(-n)$/,
  chronic: /^$/,
  gosu: /^$/,
  "su-exec": /^$/,
  tini: /^(-e|-p)$/,
  "dumb-init": /^(-r|--rewrite)$/,
  numactl: /^(-C|--physcpubind|-N|--cpunodebind|-m|--membind|-p|--preferred|-i|--interleave)$/,
  cpulimit: /^(-l|--limit|-p|--pid|-e|--exe)$/,
  trickle: /^(-d|-u|-w|-t|-l|-n)$/,
  chpst: /^(-u|-U|-b|-e|-\/|-C|-n|-l|-L|-m|-d|-o|-p|-f|-c|-r|-t)$/,
  firejail: /^$/,
  // setarch and its per-architecture names (setarch's first word, the architecture, is skipped in innerOf).
  setarch: /^$/,
  linux32: /^$/,
  linux64: /^$/,
  i386: /^$/,
  x86_64: /^$/,
  uname26: /^$/,
  "ssh-agent": /^(-a|-E|-t|-P|-O)$/,
  "dbus-run-session": /^(--config-file|--dbus-daemon)$/,
  sshpass: /^(-p|-f|-d|-P)$/,
  // Sandboxes, debuggers, caches and other launchers of the command after their options.
  bwrap:
    /^(--args|--uid|--gid|--hostname|--chdir|--unsetenv|--lock-file|--sync-fd|--info-fd|--json-status-fd|--block-fd|--userns-block-fd|--userns|--userns2|--pidns|--exec-label|--file-label|--proc|--dev|--tmpfs|--mqueue|--dir|--seccomp|--add-seccomp-fd|--cap-add|--cap-drop|--argv0|--remount-ro|--size|--perms)$/,
  cgexec: /^-g$/,
  runcon: /^(-u|--user|-r|--role|-t|--type|-l|--range)$/,
  "sandbox-exec": /^(-f|-n|-p|-D)$/,
  arch: /^(-arch|-e)$/,
  "flatpak-spawn": /^$/,
  winpty: /^$/,
  rlwrap:
    /^(-b|--break-chars|-C|--command-name|-D|--history-no-dupes|-e|--extra-char-after-completion|-f|--file|-F|--history-format|-g|--forget-matching|-H|--history-filename|-l|--logfile|-M|--multi-line-ext|-O|--only-cook|-p|--prompt-colour|-P|--pre-given|-q|--quote-characters|-s|--histsize|-S|--substitute-prompt|-t|--set-term-name|-w|--wait-before-prompt|-z|--filter)$/,
  ccache: /^$/,
  sccache: /^$/,
  distcc: /^$/,
  icecc: /^$/,
  ifne: /^$/,
  lckdo: /^-w$/,
  retry: /^(-t|--tries|--times|-d|--delay|-m|--min|-x|--max|-s|--sleep|-u|--until|-w|--while)$/,
  daemonize: /^(-c|-e|-E|-o|-p|-l|-u)$/,
  proot:
    /^(-r|--rootfs|-b|--bind|-m|--mount|-w|--cwd|--pwd|-q|--qemu|-k|--kernel-release|-v|--verbose|-i|--change-id)$/,
  "systemd-nspawn":
    /^(-D|--directory|-i|--image|-M|--machine|-u|--user|--chdir|--bind|--bind-ro|-E|--setenv|--template|--network-interface|--network-bridge|--network-zone|-p|--port|--capability|--drop-capability|--property|--slice|--register|--keep-unit|--link-journal|--resolv-conf|--timezone|--overlay|--overlay-ro|--tmpfs)$/,
  lima: /^$/,
  wsl: /^(-d|--distribution|-u|--user|--cd|--shell-type|--system)$/,
  "with-contenv": /^$/,
  caffeinate: /^(-t|-w)$/,
  // GNU parallel's semaphore: `sem [options] COMMAND…`.
  sem: /^(-j|--jobs|-P|--max-procs|--id|--semaphorename|--st|--semaphoretimeout)$/,
  ...RUNNER_OPTIONS,
};

/** Options of a wrapper that take two values (`bwrap --bind SRC DEST`, `nix-shell --arg NAME EXPR`). */
export const PAIRS: Record<string, RegExp> = {
  bwrap:
    /^(--bind|--bind-try|--dev-bind|--dev-bind-try|--ro-bind|--ro-bind-try|--symlink|--setenv|--file|--bind-data|--ro-bind-data|--chmod|--overlay-src)$/,
  ...RUNNER_PAIRS,
};

/** How many words after the options a wrapper takes before the command (`timeout 5 git`, `flock FILE git`). */
export const POSITIONALS: Record<string, number> = {
  timeout: 1,
  flock: 1,
  taskset: 1,
  chrt: 1,
  chroot: 1,
  ssh: 1,
  faketime: 1,
  gosu: 1,
  "su-exec": 1,
  // `runcon CONTEXT COMMAND`, or `runcon -t TYPE COMMAND` (a deny rule also reads the word as the command).
  runcon: 1,
  lckdo: 1,
  ...RUNNER_POSITIONALS,
};
