// Package sandbox runs one command in a container built for it and reports
// how it ended, with its output bounded.
//
// On Linux the container is built by capkit itself: Run re-executes the
// host's program as a helper (Options.Helper: the program with
// HelperArg, which any program linking this package serves from a
// package init, before main and before most libraries' own init; see
// run/sandbox/internal/helper) in new user, mount, PID, network, IPC, UTS
// and cgroup namespaces. The helper, before it execs the command:
//
//   - builds a root of its own: the system directories read-only, the
//     writable roots read-write, the read-only roots read-only, inside the
//     writable roots the protected paths that exist (`.git`, `capkit.toml`,
//     the host's names) read-only, with each directory between a root and
//     one of them pinned (mounted on itself, so it cannot be renamed away
//     with the protected path in it), a /proc of the new PID namespace, a
//     private bounded /tmp (roots within the host's /tmp are mounted on
//     it at their own paths, outside its bounds), and a /dev holding only
//     null, zero, full, random and urandom; then pivots into it, so
//     nothing else of the host's tree is reachable;
//   - applies Landlock (every access right the kernel's ABI offers, TCP
//     bind and connect denied, abstract sockets and signals scoped) as a
//     second layer matching that view (it grants whole directories, so
//     what lies within a writable root or the private /tmp and is
//     read-only, a protected path or a read-only root, is kept so by its
//     mount alone);
//   - with a network (Options.Proxy), brings up the loopback of its
//     empty network namespace and listens on ProxyAddr there, handing
//     the listener to Run, which serves it with the proxy from outside
//     (the command may connect to that port alone);
//   - drops every capability and sets no_new_privs;
//   - applies a seccomp filter (see seccomp_linux.go);
//   - sets rlimits and the PID namespace's pid_max, a clean environment,
//     and stdin from the call or /dev/null, in a session of its own with
//     no controlling terminal.
//
// The command runs as the namespace's init, so when it ends, or when Run
// kills it at the deadline, the kernel kills every process of the
// namespace: daemons and double forks do not outlive the call.
//
// A protected name that is missing does not close its directory (Landlock
// cannot refuse one name and allow the others). Instead, once every
// process of the command is gone, Run moves whatever is at a protected
// name that was not there when the command started (matched as
// capability.Protected matches: whole elements, case-insensitively) out
// of the root into a quarantine directory of the host's
// (Options.Quarantine), and the result lists each (Result.Quarantined);
// see guard_linux.go.
//
// Where this process's cgroup v2 group may have children (a delegated,
// writable group), each run gets a group of its own: the helper starts in
// it (CLONE_INTO_CGROUP), memory.max, pids.max and cpu.max are written for
// the controllers enabled there, and the whole group is killed
// (cgroup.kill) and removed when the run ends; a group left by a process
// that was killed is removed by the next process's first run.
// Result.Cgroup says which limits applied and why the others did not.
//
// The helper receives the view (roots, protected paths, limits) first and
// the call (command, working directory, environment, stdin) once its
// container is built, so a server can keep one helper started ahead
// (Warm): the call then costs the Landlock and seccomp set-up and the
// exec, not the helper's start.
//
// Where user namespaces are unavailable (or Options.Reduced asks for it),
// the command runs with Landlock, seccomp and rlimits only, and the result
// says so (Result.Containment); Options.RequireFull makes that case fail
// with fault.Unavailable instead. Its private tmp is a directory in the
// host's temporary directory, watched against Limits.TmpBytes and removed
// whatever modes the command left there (see scratch_linux.go); without a
// cgroup, setsid and setpgid fail, so that every process of the command
// stays in its process group and dies with it. On other systems Run fails
// with fault.Unavailable.
//
// The namespaces, mounts, Landlock rules and filters are written by hand
// (the helper's on package syscall alone, for its init's sake) because no
// maintained Go module builds such a container from inside a Go program
// without cgo; the seccomp syscall numbers come from x/sys/unix, and Run
// sends the helper the assembled filter.
package sandbox
