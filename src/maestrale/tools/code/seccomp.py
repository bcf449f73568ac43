"""The sandbox's seccomp filter: a classic BPF program, built here (no libseccomp) and handed to
bwrap (`--seccomp FD`), which loads it, with no_new_privs, just before it runs the launcher. The
launcher and everything the run starts inherit it, and no process can remove it.

It refuses (EPERM) the system calls a Python sandbox never needs: tracing and reading or writing
other processes' memory, kernel keyrings, BPF, perf events, userfaultfd, io_uring, mounts,
namespaces, modules, reboot, clocks, swap. Where the kernel does not count the run's memory (no
cgroup, see `cgroups.py`), it also refuses the memory the launcher cannot see or count: memory
files (`memfd_create`) and System V shared memory. A process of another architecture's system
call ABI (i386, x32) is killed: its numbers mean other calls.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

# linux/seccomp.h, linux/filter.h, linux/audit.h
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
RET_K = 0x06  # BPF_RET | BPF_K
NR_OFFSET, ARCH_OFFSET = 0, 4  # in struct seccomp_data
X32_SYSCALL_BIT = 0x40000000

# The refused calls and their numbers, the kernel's: x86_64 (asm/unistd_64.h), then arm64
# (asm-generic/unistd.h); "-" where the architecture has no such call.
_NUMBERS = """
memfd_create 319 279
ptrace 101 117
process_vm_readv 310 270
process_vm_writev 311 271
process_madvise 440 440
pidfd_getfd 438 438
kcmp 312 272
kexec_load 246 104
kexec_file_load 320 294
bpf 321 280
perf_event_open 298 241
userfaultfd 323 282
keyctl 250 219
add_key 248 217
request_key 249 218
mount 165 40
umount2 166 39
pivot_root 155 41
fsopen 430 430
fsmount 432 432
fsconfig 431 431
fspick 433 433
open_tree 428 428
move_mount 429 429
unshare 272 97
setns 308 268
swapon 167 224
swapoff 168 225
reboot 169 142
init_module 175 105
finit_module 313 273
delete_module 176 106
acct 163 89
settimeofday 164 170
clock_settime 227 112
clock_adjtime 305 266
adjtimex 159 171
open_by_handle_at 304 265
name_to_handle_at 303 264
lookup_dcookie 212 18
fanotify_init 300 262
io_uring_setup 425 425
io_uring_enter 426 426
io_uring_register 427 427
quotactl 179 60
syslog 103 116
vhangup 153 58
personality 135 92
uselib 134 -
ioperm 173 -
iopl 172 -
shmget 29 194
shmat 30 196
shmctl 31 195
shmdt 67 197
"""
# Per architecture (`platform.machine()`): AUDIT_ARCH_*, whether numbers with the x32 bit must
# be refused, and its column in _NUMBERS.
_ARCHES = {"x86_64": (0xC000003E, True, 1), "aarch64": (0xC00000B7, False, 2)}
# Refused only where the kernel does not count the run's memory.
UNCOUNTED_MEMORY = ("memfd_create", "shmget", "shmat", "shmctl", "shmdt")


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(*, memory_counted: bool, machine: str | None = None) -> bytes | None:
    """The filter as bwrap reads it (struct sock_filter instructions), or None on an
    architecture this module has no numbers for."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, x32, column = arch
    refused = sorted(
        {
            int(row[column])
            for row in (line.split() for line in _NUMBERS.strip().splitlines())
            if row[column] != "-" and not (memory_counted and row[0] in UNCOUNTED_MEMORY)
        }
    )
    # The checks jump forward to the two returns at the end: "allow" then "refuse".
    checks = len(refused) + (1 if x32 else 0)
    out = [
        _insn(LD_W_ABS, 0, 0, ARCH_OFFSET),
        _insn(JEQ_K, 1, 0, audit_arch),
        _insn(RET_K, 0, 0, RET_KILL_PROCESS),
        _insn(LD_W_ABS, 0, 0, NR_OFFSET),
    ]
    remaining = checks
    if x32:
        remaining -= 1
        out.append(_insn(JGE_K, remaining + 1, 0, X32_SYSCALL_BIT))
    for nr in refused:
        remaining -= 1
        out.append(_insn(JEQ_K, remaining + 1, 0, nr))
    out.append(_insn(RET_K, 0, 0, RET_ALLOW))
    out.append(_insn(RET_K, 0, 0, RET_ERRNO | errno.EPERM))
    return b"".join(out)


def memory_file(data: bytes) -> int:
    """A memory file holding `data`, at its start, for bwrap to read."""
    fd = os.memfd_create("seccomp")
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd
