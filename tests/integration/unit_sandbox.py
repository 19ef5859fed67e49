#!/usr/bin/env python3
"""Runs a command under the sandbox a systemd service unit describes, where no
systemd runs units (fuse.mount_helper: containers, CI machines).

  unit_sandbox.py UNIT_FILE -- COMMAND [ARG...]

Applies, from the unit's [Service] section, as systemd 252 does for a root
service: UMask=, PrivateNetwork= and ProtectHostname= (namespaces of their
own), CapabilityBoundingSet=, NoNewPrivileges=, SystemCallFilter= with
SystemCallErrorNumber= and SystemCallArchitectures=native (libseccomp, the
groups as `systemd-analyze syscall-filter` lists them), RestrictAddressFamilies=
and MemoryDenyWriteExecute= (a second seccomp filter, as systemd loads it),
then execs COMMAND in the same process. Other settings (device policy,
IPAddressDeny=, ...) are not emulated; `systemd-analyze verify` checks them.
Exits non-zero with a message on what it cannot apply.
"""
import ctypes
import errno
import os
import subprocess
import sys


def directives(path):
    """[Service] settings in order, as (key, value) pairs."""
    out, section = [], None
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line:
            key, value = line.split("=", 1)
            out.append((key.strip(), value.strip()))
    return out


def expand(group, seen=None):
    """Syscall names of a group (@name, nested groups followed) or a name."""
    if not group.startswith("@"):
        return {group}
    seen = seen if seen is not None else set()
    if group in seen:
        return set()
    seen.add(group)
    text = subprocess.run(["systemd-analyze", "syscall-filter", group], check=True,
                          capture_output=True, text=True).stdout
    names = set()
    for line in text.splitlines()[1:]:
        item = line.strip()
        if item and not item.startswith("#"):
            names |= expand(item, seen)
    return names


def allowed_syscalls(settings):
    """SystemCallFilter= semantics: the first list decides allow or deny;
    later ~lists remove from an allow list, plain ones add; empty resets."""
    allow = None
    for key, value in settings:
        if key != "SystemCallFilter":
            continue
        if not value:
            allow = None
            continue
        negate = value.startswith("~")
        names = set().union(*(expand(g) for g in value.lstrip("~").split()))
        if allow is None:
            if negate:
                sys.exit("unit_sandbox: a deny-list SystemCallFilter= is not emulated")
            allow = names
        elif negate:
            allow -= names
        else:
            allow |= names
    return allow


def last(settings, key, default=""):
    value = default
    for k, v in settings:
        if k == key:
            value = v
    return value


# capabilities(7), by number.
CAPABILITIES = [
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
    "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
    "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
    "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
]


class ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_NE, SCMP_CMP_MASKED_EQ = 1, 7


def act_errno(e):
    return 0x00050000 | (e & 0xFFFF)


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    settings = directives(sys.argv[1])
    command = sys.argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        seccomp = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError as e:
        sys.exit(f"unit_sandbox: libseccomp.so.2 (package libseccomp2, which systemd needs): {e}")
    seccomp.seccomp_init.restype = ctypes.c_void_p
    seccomp.seccomp_init.argtypes = [ctypes.c_uint32]
    seccomp.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                               ctypes.c_uint, ctypes.POINTER(ArgCmp)]
    seccomp.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    seccomp.seccomp_load.argtypes = [ctypes.c_void_p]

    def check(rc, what):
        if rc != 0:
            e = ctypes.get_errno() or -rc
            sys.exit(f"unit_sandbox: {what}: {os.strerror(e)}")

    def rule(ctx, action, name, *cmps):
        nr = seccomp.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            return  # not a system call of this architecture
        array = (ArgCmp * max(len(cmps), 1))(*cmps)
        check(seccomp.seccomp_rule_add_array(ctx, action, nr, len(cmps), array), f"rule {name}")

    if last(settings, "UMask"):
        os.umask(int(last(settings, "UMask"), 8))
    flags = 0
    if last(settings, "PrivateNetwork") in ("yes", "true", "1"):
        flags |= 0x40000000  # CLONE_NEWNET
    if last(settings, "ProtectHostname") in ("yes", "true", "1"):
        flags |= 0x04000000  # CLONE_NEWUTS
    if flags:
        check(libc.unshare(flags), "unshare")
    bounding = None
    for key, value in settings:
        if key == "CapabilityBoundingSet":
            bounding = set(value.split()) if value else None
    if bounding is not None:
        caps = {name: number for number, name in enumerate(CAPABILITIES)}
        unknown = bounding - set(caps)
        if unknown:
            sys.exit(f"unit_sandbox: unknown capabilities {unknown}")
        # CAP_SETPCAP last: dropping needs it.
        last_cap = int(open("/proc/sys/kernel/cap_last_cap").read())
        for name in sorted(caps, key=lambda n: n == "CAP_SETPCAP"):
            if name not in bounding and caps[name] <= last_cap:
                check(libc.prctl(24, caps[name], 0, 0, 0), f"PR_CAPBSET_DROP {name}")
    if last(settings, "NoNewPrivileges") in ("yes", "true", "1"):
        check(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")

    # Two filters, as systemd loads them (the strictest answer wins): address
    # families and W^X first, the system call list last (loading it needs
    # seccomp(2), which the list may not allow).
    extra = seccomp.seccomp_init(SCMP_ACT_ALLOW)
    families = None
    for key, value in settings:
        if key == "RestrictAddressFamilies":
            families = ((families or set()) | set(value.split())) if value else None
    if families is not None:
        if families != {"AF_UNIX"}:
            sys.exit("unit_sandbox: only RestrictAddressFamilies=AF_UNIX is emulated")
        rule(extra, act_errno(errno.EAFNOSUPPORT), "socket", ArgCmp(0, SCMP_CMP_NE, 1, 0))
    if last(settings, "MemoryDenyWriteExecute") in ("yes", "true", "1"):
        prot_wx, prot_x, shm_exec = 0x2 | 0x4, 0x4, 0o100000
        rule(extra, act_errno(errno.EPERM), "mmap", ArgCmp(2, SCMP_CMP_MASKED_EQ, prot_wx, prot_wx))
        for name in ("mprotect", "pkey_mprotect"):
            rule(extra, act_errno(errno.EPERM), name, ArgCmp(2, SCMP_CMP_MASKED_EQ, prot_x, prot_x))
        rule(extra, act_errno(errno.EPERM), "shmat",
             ArgCmp(2, SCMP_CMP_MASKED_EQ, shm_exec, shm_exec))
    allow = allowed_syscalls(settings)
    calls = None
    if allow is not None:
        error = last(settings, "SystemCallErrorNumber")
        calls = seccomp.seccomp_init(act_errno(getattr(errno, error)) if error else 0x80000000)
        for name in sorted(allow):
            rule(calls, SCMP_ACT_ALLOW, name)
    check(seccomp.seccomp_load(extra), "seccomp_load (families, W^X)")
    if calls is not None:
        check(seccomp.seccomp_load(calls), "seccomp_load (system calls)")
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
