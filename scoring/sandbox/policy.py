"""What a sandbox worker may do: its seccomp filter and its resource limits.

The seccomp filter is compiled here, in the trusted parent, by libseccomp (the library
systemd, Docker and Podman use; Debian's ``libseccomp2``) through ``pyseccomp``, a thin
ctypes binding to it that is API-compatible with libseccomp's own Python module (which
Debian builds for its system Python only, not for a virtualenv). libseccomp knows each
architecture's syscall numbers and adds the architecture check (a 32-bit or x32 syscall
cannot slip past a 64-bit filter), which a hand-written BPF program would have to get
right by itself. The worker receives the compiled BPF program and loads it with one
``seccomp(2)`` call, so nothing beyond the standard library runs inside the sandbox.

The filter allows by default and refuses (EPERM) what a scoring function never needs
and an escape would: sockets, new processes and exec, ptrace and other processes'
memory, signals to other processes, System V and POSIX IPC (host-wide without an IPC
namespace), opening files for writing and changing the filesystem, and kernel
interfaces with a history of holes (bpf, io_uring, userfaultfd, perf, keyrings, mounts,
namespaces). Denying by name keeps Python working unchanged;
the namespaces, Landlock and the resource limits stand behind it.
"""

from __future__ import annotations

import errno
import os
import tempfile
from functools import cache
from typing import Any

# Refused outright.
DENIED = (
    # network
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "sendto", "sendmsg", "sendmmsg", "recvfrom", "recvmsg", "recvmmsg",
    "getsockopt", "setsockopt", "getsockname", "getpeername", "shutdown",
    # new processes, exec, other processes
    "fork", "vfork", "clone", "execve", "execveat", "ptrace",
    "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",
    "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
    "pidfd_open", "pidfd_getfd", "pidfd_send_signal",
    # namespaces, mounts, privileges
    "setns", "unshare", "mount", "umount2", "pivot_root", "chroot", "mount_setattr",
    "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups",
    "setfsuid", "setfsgid", "capset", "setrlimit", "setpriority", "sched_setattr",
    "sched_setscheduler", "sched_setaffinity",
    # writing to the filesystem (opening for writing is refused by the rules below)
    "creat", "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir", "mkdirat",
    "rmdir", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat",
    "chown", "fchown", "lchown", "fchownat", "truncate", "ftruncate", "fallocate",
    "mknod", "mknodat", "utime", "utimes", "utimensat", "futimesat", "setxattr",
    "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    "memfd_create", "memfd_secret", "name_to_handle_at", "open_by_handle_at",
    "inotify_init", "inotify_init1", "fanotify_init",
    # inter-process communication outside the worker: System V shared memory, message
    # queues and semaphores are host-wide where there is no IPC namespace (the Landlock
    # fallback), POSIX message queues likewise; both modes refuse them alike
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
    "semget", "semop", "semtimedop", "semctl", "ipc",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    # kernel interfaces a scoring function has no use for
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "personality", "syslog",
    "acct", "quotactl", "swapon", "swapoff", "reboot", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "iopl", "ioperm", "modify_ldt",
    "vhangup", "lookup_dcookie", "mbind", "migrate_pages", "move_pages",
    "set_mempolicy", "ioprio_set",
)  # fmt: skip
# Refused with ENOSYS, so the C library falls back to a call the filter can inspect.
NOT_IMPLEMENTED = ("clone3", "openat2")
# open/openat flags that write or create.
WRITE_FLAGS = (os.O_WRONLY, os.O_RDWR, os.O_CREAT, os.O_TRUNC, os.O_APPEND)


class PolicyUnavailable(RuntimeError):
    """libseccomp (or its binding) is missing: no filter can be built."""


@cache
def seccomp_program() -> bytes:
    """The compiled BPF program (struct sock_filter array). Raises PolicyUnavailable."""
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError) as exc:
        raise PolicyUnavailable(
            f"libseccomp is not available ({exc}); install Debian's libseccomp2"
        ) from exc
    refuse, nosys = sc.ERRNO(errno.EPERM), sc.ERRNO(errno.ENOSYS)
    filt = sc.SyscallFilter(sc.ALLOW)
    try:
        for name in DENIED:
            _add(sc, filt, refuse, name)
        for name in NOT_IMPLEMENTED:
            _add(sc, filt, nosys, name)
        # Opening for writing: open(path, flags) and openat(dirfd, path, flags).
        for name, flags_arg in (("open", 1), ("openat", 2)):
            for flag in WRITE_FLAGS:
                _add(sc, filt, refuse, name, sc.Arg(flags_arg, sc.MASKED_EQ, flag, flag))
        # prlimit64 may read limits (new_limit NULL), never set them.
        _add(sc, filt, refuse, "prlimit64", sc.Arg(2, sc.NE, 0))
        with tempfile.TemporaryFile() as out:
            filt.export_bpf(out)
            out.seek(0)
            program = out.read()
    except OSError as exc:
        raise PolicyUnavailable(f"libseccomp could not build the filter: {exc}") from exc
    if not program or len(program) % 8:
        raise PolicyUnavailable("libseccomp produced no filter")
    return program


def _add(sc: Any, filt: Any, action: int, name: str, *args: Any) -> None:
    if sc.resolve_syscall(sc.Arch.NATIVE, name) < 0:
        return  # not a syscall on this architecture (e.g. `open` on arm64): nothing to deny
    filt.add_rule(action, name, *args)


# Resource limits (soft = hard; the filter refuses setrlimit and prlimit64 writes).
MEMORY_BYTES = 1024 * 1024 * 1024  # address space: Python needs ~40 MB of it
CPU_SECONDS = 600  # a lifetime ceiling; the pool retires a worker at half of it
OPEN_FILES = 32


def limits() -> dict[str, int]:
    return {
        "RLIMIT_AS": MEMORY_BYTES,
        "RLIMIT_CPU": CPU_SECONDS,
        "RLIMIT_FSIZE": 0,  # no file writes (the filter refuses opening for writing, too)
        "RLIMIT_CORE": 0,
        "RLIMIT_NOFILE": OPEN_FILES,
        "RLIMIT_NPROC": 0,  # no new processes (the filter refuses them, too)
        "RLIMIT_MEMLOCK": 0,
        "RLIMIT_MSGQUEUE": 0,
    }
