"""The guard between Glider and a delegate CLI: no process of a run outlives the run, nor Glider.

    python -I -S guard.py FD DIR [DIR ...] -- COMMAND [ARG ...]   (started by `delegate.runner`)

Contract:
- Run as a script by path, standard library only (`-I -S`: the agent's environment cannot change
  which Python code runs here). FD is the guard's end of a socket pair whose other end only Glider
  holds (the lifeline); the DIRs are the run's private directories. A signal or a child's exit wakes
  the guard at once (`signal.set_wakeup_fd`): no polling interval.
- The guard starts COMMAND in a process group of its own (stdin, stdout, stderr, cwd and environment
  are the guard's), writes `started <pid>` on FD and waits for it.
- On Linux the guard is a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`): a descendant whose parent
  exits is re-parented to the guard, not to init, even one that moved to a session or process group
  of its own, so the run's whole tree is found under the guard in /proc. It also asks for SIGTERM
  when the Glider thread that started it dies (`PR_SET_PDEATHSIG`). Elsewhere the tree is COMMAND's
  process group.
- The run's tree is ended (SIGTERM to every process in it, SIGKILL to what is left after `GRACE`
  seconds, the tree read again each pass so what a dying process forks is ended too) when:
  the guard gets SIGTERM, SIGINT or SIGHUP (Glider stops the run); the lifeline reads end of file
  (Glider is gone, even killed with SIGKILL: then the guard also removes the DIRs, which Glider can no
  longer do); or COMMAND has exited and left processes behind.
- Then it writes `ended <n>` (the processes it signalled) on FD and exits as COMMAND did (its exit
  code, or killed by the same signal); 127 when COMMAND cannot be started (the reason on stderr).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

GRACE = 2.0
KILL_WAIT = 5.0
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _linux_tree(me: int) -> set[int]:
    """The live (not zombie) descendants of `me`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if fields and fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [me]
    while todo:
        for pid in children.get(todo.pop(), ()):
            if pid not in found:
                found.add(pid)
                todo.append(pid)
    return found


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class Guard:
    def __init__(self, life: int, dirs: list[str], command: list[str]) -> None:
        self.life = life
        self.dirs = dirs
        self.command = command
        self.me = os.getpid()
        self.linux = sys.platform.startswith("linux") and os.path.isdir("/proc")
        self.subreaper = self.linux and _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        self.stop_signal: int | None = None
        self.status: int | None = None
        self.child = 0

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stop_signal = signum

    def _say(self, line: str) -> None:
        try:
            os.write(self.life, line.encode() + b"\n")
        except OSError:
            pass

    def _reap(self) -> None:
        """Collect every exited child (re-parented orphans included), keeping COMMAND's status."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child:
                self.status = status

    def _tree(self) -> set[int]:
        if self.subreaper:
            return _linux_tree(self.me)
        found = _linux_tree(self.me) if self.linux else set()
        if _group_alive(self.child):
            found.add(self.child)
        return found

    def _end_tree(self) -> int:
        """SIGTERM to the run's tree, SIGKILL to what is left after GRACE; the processes signalled."""
        signalled: set[int] = set()
        sent: set[tuple[int, int]] = set()
        start = time.monotonic()
        while True:
            self._reap()
            live = self._tree()
            if not live:
                break
            waited = time.monotonic() - start
            if waited > GRACE + KILL_WAIT:
                break  # only a process stuck in the kernel survives SIGKILL this long
            sig = signal.SIGTERM if waited < GRACE else signal.SIGKILL
            for pid in live:
                if (pid, sig) not in sent:
                    sent.add((pid, sig))
                    try:
                        os.kill(pid, sig)
                    except (ProcessLookupError, PermissionError):
                        pass
            if not self.subreaper:
                try:
                    os.killpg(self.child, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            signalled |= live
            time.sleep(0.02)
        self._reap()
        return len(signalled)

    def _orphaned(self) -> bool:
        """True when the lifeline reads end of file (nothing else is ever sent on it)."""
        try:
            return os.read(self.life, 1) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def run(self) -> int:
        # Every signal (a stop, SIGCHLD when a process of the tree exits) wakes the wait below at once.
        wake, woken = os.pipe()
        os.set_blocking(wake, False)
        os.set_blocking(woken, False)
        signal.set_wakeup_fd(woken)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        for sig in _STOPPING:
            signal.signal(sig, self._on_signal)
        if self.linux:
            _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        try:
            self.child = os.posix_spawn(self.command[0], self.command, dict(os.environ), setpgroup=0)
        except OSError as exc:
            sys.stderr.write(f"glider: cannot start {self.command[0]}: {exc}\n")
            return 127
        self._say(f"started {self.child}")
        orphaned = False
        while self.stop_signal is None and self.status is None:
            try:
                ready, _, _ = select.select([self.life, wake], [], [], 1.0)
            except InterruptedError:
                ready = []
            if wake in ready:
                try:
                    while os.read(wake, 512):
                        pass
                except BlockingIOError:
                    pass
            if self.life in ready and self._orphaned():
                orphaned = True
                break
            self._reap()
        ended = self._end_tree()
        if orphaned or self._orphaned():
            import shutil

            for d in self.dirs:
                shutil.rmtree(d, ignore_errors=True)
        self._say(f"ended {ended}")
        status = self.status
        if status is None:
            return 128 + (self.stop_signal or signal.SIGKILL)
        if os.WIFSIGNALED(status):
            killed = os.WTERMSIG(status)
            signal.signal(killed, signal.SIG_DFL)
            os.kill(self.me, killed)  # exit as COMMAND did: killed by the same signal
            return 128 + killed
        return os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") < 1 or argv.index("--") == len(argv) - 1:
        sys.stderr.write("usage: guard.py FD DIR [DIR ...] -- COMMAND [ARG ...]\n")
        return 2
    cut = argv.index("--")
    life = int(argv[0])
    os.set_inheritable(life, False)
    os.set_blocking(life, False)
    return Guard(life, argv[1:cut], argv[cut + 1 :]).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
