"""Attacks on other containers and on the host: each runs while a victim in another container acts.

tests/test_hostile.py shows that a program harms nothing in its own container. This file goes one
level out (issue 37): what a program can take from programs in *other* containers and from the
host, through what every container shares, the kernel. Each attack runs in one container while,
at the same moment, a victim runs in another, under runc and under runsc (gVisor):

- per-user kernel counters: pipe-buffer pages, inotify instances, POSIX message-queue bytes,
  pending real-time signals. The attacker, in as many processes as it needs, takes all its kernel
  user may have and holds it; the victim, a correct HumanEval/0 program that needs one of them,
  must get the reference's verdict (pass), as it does when it runs alone. So each container's
  programs must have a kernel user of their own (under runc: a host uid no other container's
  programs have, which the programs read; under runsc each container has a kernel of its own).
- host-wide kernel tables and surfaces: pseudo-terminals and socket families other than Unix,
  loopback IP and netlink's routing protocol (other netlink protocols, packet, AF_ALG, AF_VSOCK,
  ...) must be refused by the kernel (an OSError) under runc, while Unix, TCP and UDP over IPv4
  and IPv6 loopback still work; under runsc they are gVisor's own, and the host's tables must not
  move.
- the warden: helpers that try to change its CPU affinity, I/O priority, nice, scheduling policy
  and resource limits at the instant it ends them leave every one of those as it was (or the
  container is replaced).

Both kinds of container sandbox are shown: the pool, driven directly (two containers of one pool,
an attacker in one and its victims in the other, started from here so that they overlap), and
Inspect's `docker` sandbox, where every sample has a container of its own and all start together
(attackers hold what they took for most of their time limit, victims wait a few seconds before
they act). Every attacker reports what it took and when it held it (its failure message), every
victim when it acted (its stderr), and the test checks that each victim acted while its attacker
held. The host is probed by the test itself, before, during and after each attack: its pty count,
its netlink sockets and socket counters, its open files, and the pipe size a new pipe of each
programs' user gets (made by a process of that uid on the host). After each attack everything must
be back at the baseline. `pytest -s` prints the table behind the closing note.
"""

import asyncio
import contextlib
import fcntl
import functools
import json
import os
import re
import subprocess
import textwrap
import threading
import time
from collections.abc import AsyncIterator

import pytest
from inspect_ai import eval as inspect_eval

from heval_inspect.data import HUMANEVAL, load_official
from heval_inspect.sandbox import (
    DEFAULT_MEMORY_MIB,
    EXECUTOR_GRACE_SECONDS,
    EXECUTOR_SOURCE,
    FILE_BYTES,
    PROGRAM_TASKS,
    WALL_CLOCK_FACTOR,
    sandbox_compose_file,
)
from heval_inspect.sandbox.pool import new_pool
from heval_inspect.schema import Execution
from heval_inspect.scorer import assemble_program
from heval_inspect.tasks import humaneval

pytestmark = pytest.mark.docker

# The programs' user on the landed code (every container's), probed on the host whatever the
# programs say their user is: a host service running as nobody shares its counters.
NOBODY = 65534
PIPE_BYTES = 65536  # a new pipe's size while its user is under fs.pipe-user-pages-soft
F_GETPIPE_SZ = 1032

# ---- The programs -----------------------------------------------------------------------------
# Module-level code after the canonical answer of HumanEval/0: it runs before the tests are
# defined. @NAME@ marks what each use fills in.

# What every attacker and victim can call: the host uid its kernel user is (the container's uid
# through its user-namespace map, if it has one; under gVisor, the sandbox kernel's map).
COMMON = """
import ctypes, errno, fcntl, json, os, platform, posix, re, select, signal, socket, time
START = time.time()
libc = ctypes.CDLL(None, use_errno=True)
def host_uid():
    uid = os.getuid()
    for line in open('/proc/self/uid_map'):
        inside, outside, count = map(int, line.split())
        if inside <= uid < inside + count:
            return outside + uid - inside
    return -1
def failure():
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
def kernel(result, call):
    if result < 0:
        raise OSError(ctypes.get_errno(), f'{call}: {os.strerror(ctypes.get_errno())}')
    return result
"""

# An attacker: @HELPERS@ processes each run grab() (what it took, and why it stopped), then hold
# it; the main process waits for their reports, holds until @HOLD@ s after it started, and fails
# with what they took and when it held it. Its helpers are killed by the warden when it ends.
ATTACK = (
    COMMON
    + """
held = []
@GRAB@
reports, writer = posix.pipe()
helpers = 0
for _ in range(@HELPERS@):
    try:
        child = posix.fork()
    except OSError:
        break
    if child == 0:
        try:
            got, note = grab()
        except BaseException as error:
            got, note = 0, f'{type(error).__name__}: {error}'
        posix.write(writer, f'{got} {note}\\n'.encode())
        while True:
            time.sleep(60)
    helpers += 1
posix.close(writer)
lines = b''
while lines.count(b'\\n') < helpers and time.time() < START + @HOLD@ - 0.5:
    if select.select([reports], [], [], 0.05)[0]:
        chunk = posix.read(reports, 65536)
        if not chunk:
            break
        lines += chunk
filled = time.time()
rows = [line.split(' ', 1) for line in lines.decode().splitlines()]
time.sleep(max(0.0, START + @HOLD@ - time.time()))
raise RuntimeError('attack ' + json.dumps({
    'uid': os.getuid(), 'host_uid': host_uid(), 'helpers': helpers, 'reported': len(rows),
    'got': sum(int(row[0]) for row in rows), 'notes': sorted({row[1] for row in rows}),
    'filled': filled, 'released': time.time()}))
"""
)

# grab(): each stops at its kernel's limit (the note says which error), at a cap, or at @FILL@ s.
GRAB = {
    # Pipes, each filled and held by its read end, until pipe creation fails (the process's open
    # files) or the deadline: past fs.pipe-user-pages-soft (1,024 pipes of 16 pages) the user's
    # new pipes come smaller, and the helpers keep taking those too, so that the user stays past
    # it (a helper that stopped at its first smaller pipe could leave it just under).
    "pipe pages": """
def grab():
    got, smaller, block = 0, set(), b'x' * 65536
    while True:
        if time.time() > START + @FILL@:
            stop = 'deadline'
            break
        try:
            reader, writer = posix.pipe()
        except OSError as error:
            stop = errno.errorcode[error.errno]
            break
        size = fcntl.fcntl(writer, 1032)
        if size < 65536:
            smaller.add(size)
        os.set_blocking(writer, False)
        try:
            while True:
                posix.write(writer, block)
        except BlockingIOError:
            pass
        posix.close(writer)
        held.append(reader)
        got += 1
    return got, stop + ''.join(f', reduced to {size}' for size in sorted(smaller))
""",
    "inotify instances": """
def grab():
    got = 0
    while time.time() < START + @FILL@:
        if libc.inotify_init1(0) < 0:
            return got, failure()
        got += 1
    return got, 'deadline'
""",
    # Queues of the default size (10 messages of 8 KiB, about 82 KB of RLIMIT_MSGQUEUE's
    # 819,200 bytes each), fewer than the container's 16 (fs.mqueue.queues_max).
    "message-queue bytes": """
def grab():
    got = 0
    while got < 64 and time.time() < START + @FILL@:
        name = f'/attack-{posix.getpid()}-{got}'.encode()
        if libc.mq_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, None) < 0:
            return got, failure()
        got += 1
    return got, 'cap'
""",
    # Real-time signals queued to itself, blocked, until sigqueue fails (EAGAIN: the user's
    # RLIMIT_SIGPENDING is reached).
    "pending signals": """
def grab():
    signal.pthread_sigmask(signal.SIG_BLOCK, range(signal.SIGRTMIN, signal.SIGRTMAX + 1))
    me, got = posix.getpid(), 0
    while got < 400000:
        if got % 4096 == 0 and time.time() > START + @FILL@:
            return got, 'deadline'
        if libc.sigqueue(me, signal.SIGRTMIN, ctypes.c_void_p(0)) != 0:
            return got, failure()
        got += 1
    return got, 'cap'
""",
    # At most @CAP@ of each: enough to show the table is reached, far from taking the shared
    # host's (4,096 here) while the fix is not in.
    "pseudo-terminals": """
def grab():
    notes = []
    for path in ('/dev/ptmx', '/dev/pts/ptmx'):
        for _ in range(@CAP@):
            try:
                held.append(posix.open(path, os.O_RDWR | os.O_NOCTTY))
            except OSError as error:
                notes.append(f'{path} {errno.errorcode[error.errno]}')
                break
        else:
            notes.append(f'{path} cap')
    return len(held), ', '.join(notes)
""",
    # Every family but Unix and IP (netlink with every protocol but the routing one, which
    # reaches only the container's own network namespace and is allowed, packet sockets, AF_ALG,
    # AF_VSOCK, ...), in every socket type.
    "socket families": """
def grab():
    kinds = (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_SEQPACKET)
    tries = [(16, kind, protocol) for protocol in range(1, 32) for kind in kinds[1:3]]
    tries += [(17, kind, 0x0300) for kind in kinds[1:3]]
    tries += [(family, kind, 0) for family in range(3, 46) if family not in (10, 16, 17)
              for kind in kinds]
    opened, errors = [], set()
    for family, kind, protocol in tries:
        try:
            held.append(socket.socket(family, kind, protocol))
            opened.append(f'{family}/{kind}/{protocol}')
        except OSError as error:
            errors.add(errno.errorcode.get(error.errno, str(error.errno)))
    return len(opened), ' '.join(opened[:30]) + ' refused: ' + ','.join(sorted(errors))
""",
}

# A victim: after @DELAY@ s it acts, and again every @EVERY@ s until @UNTIL@ s after it started
# (at least once), so that it acts while an attacker started a few seconds apart holds what it
# took; it says on its stderr (fd 2, whose tail the verdict keeps) as whom it runs, and when each
# act started and ended, on one line (the log's explanation keeps the last lines).
VICTIM = (
    COMMON
    + """
def act():
@ACT@
posix.write(2, f'victim host_uid {host_uid()}\\n'.encode())
time.sleep(@DELAY@)
while True:
    posix.write(2, f'act {time.time():.3f}'.encode())
    act()
    posix.write(2, f' {time.time():.3f}; '.encode())
    if time.time() + @EVERY@ > START + @UNTIL@:
        break
    time.sleep(@EVERY@)
posix.write(2, b'\\n')
"""
)
ACTS = {
    # A pipe of the default size: 64 KiB written before anything reads them (a program that
    # relies on it blocks for good with a smaller pipe), then 1 MB from a child to its parent.
    "moves 64 KiB and 1 MB through pipes": """
reader, writer = posix.pipe()
posix.write(writer, b'x' * 65536)
assert len(posix.read(reader, 65536)) == 65536
posix.close(reader)
posix.close(writer)
reader, writer = posix.pipe()
child = posix.fork()
if child == 0:
    data, sent = b'y' * (1 << 20), 0
    while sent < len(data):
        sent += posix.write(writer, data[sent:])
    posix._exit(0)
posix.close(writer)
moved = 0
while chunk := posix.read(reader, 65536):
    moved += len(chunk)
posix.close(reader)
posix.waitpid(child, 0)
assert moved == 1 << 20, moved
""",
    "gets a pipe of 64 KiB": """
reader, writer = posix.pipe()
size = fcntl.fcntl(writer, 1032)
posix.close(reader)
posix.close(writer)
assert size == 65536, f'a new pipe holds {size} bytes'
""",
    "gets an inotify instance": """
posix.close(kernel(libc.inotify_init1(0), 'inotify_init1'))
""",
    "sends through a message queue": """
name = f'/victim-{posix.getpid()}'.encode()
queue = kernel(libc.mq_open(name, os.O_CREAT | os.O_RDWR, 0o600, None), 'mq_open')
libc.mq_unlink(name)
kernel(libc.mq_send(queue, b'hello', 5, 0), 'mq_send')
buffer = ctypes.create_string_buffer(8192)
assert kernel(libc.mq_receive(queue, buffer, 8192, None), 'mq_receive') == 5
libc.mq_close(queue)
""",
    "queues and takes real-time signals": """
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGRTMIN})
for n in range(3):
    kernel(libc.sigqueue(posix.getpid(), signal.SIGRTMIN, ctypes.c_void_p(n)), 'sigqueue')
received = [signal.sigtimedwait({signal.SIGRTMIN}, 1) for _ in range(3)]
assert None not in received, received
""",
    "is a correct program": "pass\n",
    # The control: what tests may use still works.
    "talks over Unix, TCP and UDP on IPv4 and IPv6 loopback": """
left, right = socket.socketpair()
left.sendall(b'unix')
assert right.recv(4) == b'unix'
left.close()
right.close()
for family, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):
    server = socket.create_server((host, 0), family=family)
    client = socket.create_connection(server.getsockname()[:2])
    connection, _ = server.accept()
    client.sendall(b'tcp')
    assert connection.recv(3) == b'tcp'
    receiver = socket.socket(family, socket.SOCK_DGRAM)
    receiver.bind((host, 0))
    sender = socket.socket(family, socket.SOCK_DGRAM)
    sender.sendto(b'udp', receiver.getsockname())
    assert receiver.recv(3) == b'udp'
    for end in (connection, client, server, receiver, sender):
        end.close()
""",
}

# Each attack, the processes it spreads over, and its victims.
ATTACKS: dict[str, tuple[int, list[str]]] = {
    # 1,024 pipes of 16 pages reach the 16,384-page soft limit; a process holds ~250.
    "pipe pages": (8, ["gets a pipe of 64 KiB", "moves 64 KiB and 1 MB through pipes"]),
    "inotify instances": (2, ["gets an inotify instance"]),
    "message-queue bytes": (1, ["sends through a message queue"]),
    "pending signals": (1, ["queues and takes real-time signals"]),
    "pseudo-terminals": (1, ["is a correct program"]),
    "socket families": (1, ["talks over Unix, TCP and UDP on IPv4 and IPv6 loopback"]),
}
# The attacks whose every try must be refused by the kernel (the others take a per-user counter).
# Under gVisor the kernel a program reaches is gVisor's own: its pseudo-terminals and netlink
# sockets are that kernel's, in the container's memory, and the host's tables stay as they were
# (the host probes check that); there an attacker may get them.
REFUSED = ["pseudo-terminals", "socket families"]
REFUSED_UNDER = {"runc": REFUSED, "runsc": []}
# What shows that a per-user attack took all its user may have (runc: the host kernel's limits;
# gVisor has its own, or none, and its attackers stop at a cap or the deadline instead). EPERM or
# ENOSYS: the call is refused to every program (cut from the kernel surface), as for the victims.
AT_THE_LIMIT = {
    "pipe pages": re.compile(r"reduced to \d+"),
    "inotify instances": re.compile(r"EMFILE|EPERM|ENOSYS"),  # max_user_instances reached
    "message-queue bytes": re.compile(r"EMFILE|EPERM|ENOSYS"),  # RLIMIT_MSGQUEUE reached
    "pending signals": re.compile(r"EAGAIN"),  # RLIMIT_SIGPENDING reached
}
# inotify and POSIX message queues may be cut from the kernel surface for every program (the fix's
# seccomp profile; gVisor has no mq_timedsend): then such a victim's verdict is the kernel's
# refusal of the call (EPERM, ENOSYS), the same as when it runs alone, never what an attacker
# causes (EMFILE, EAGAIN, a smaller pipe, a time-out).
MAY_BE_REFUSED = {"gets an inotify instance", "sends through a message queue"}
REFUSED_ALIKE = re.compile(r"failed: \[Errno (1|38)\] .*")


def refused_to_all(act: str, verdict: str) -> bool:
    """Whether the victim's call was refused as the kernel refuses it to every program (the
    seccomp allowlist's EPERM, gVisor's ENOSYS): no attack made it fail, and whether it ran during
    the attack says nothing (it fails at its first act, which may come before the attacker holds
    what it takes)."""
    return act in MAY_BE_REFUSED and bool(REFUSED_ALIKE.fullmatch(verdict))


def victim_verdict_is_right(act: str, verdict: str) -> bool:
    """The reference's verdict (the victims are correct programs), or the kernel's refusal of a
    call it refuses to every program."""
    return verdict == "passed" or refused_to_all(act, verdict)


PTY_CAP = 100

# Reads the warden's attributes (the warden is every program's parent) and its own, and fails
# with them: who the programs run as, and what a program could have changed on the warden.
READER = (
    COMMON
    + """
IOPRIO_GET = {'x86_64': 252, 'aarch64': 31}[platform.machine()]
def attributes(pid, limits):
    found = {}
    def note(name, read):
        try:
            found[name] = read()
        except OSError as error:
            found[name] = 'error ' + errno.errorcode.get(error.errno, str(error.errno))
    def ioprio():
        value = libc.syscall(IOPRIO_GET, 1, pid)
        return value if value >= 0 else 'error ' + failure()
    keys = ('Cpus_allowed_list', 'Uid', 'Gid', 'CapEff', 'NoNewPrivs', 'Seccomp')
    note('cpus', lambda: sorted(os.sched_getaffinity(pid)))
    note('nice', lambda: os.getpriority(os.PRIO_PROCESS, pid))
    note('policy', lambda: os.sched_getscheduler(pid))
    note('priority', lambda: os.sched_getparam(pid).sched_priority)
    note('ioprio', ioprio)
    note('status', lambda: [' '.join(line.split()) for line in open(f'/proc/{pid}/status')
                            if line.split(':')[0] in keys])
    if limits:
        note('limits', lambda: [re.sub(r'\\s\\s+', '|', line.strip())[4:] for line in
                                list(open(f'/proc/{pid}/limits'))[1:]])
    return found
raise RuntimeError('reader ' + json.dumps({
    'uid': os.getuid(), 'host_uid': host_uid(),
    'warden': attributes(posix.getppid(), True), 'self': attributes(posix.getpid(), False)}))
"""
)

# Its helpers try, in a tight loop until the warden kills them, to pin the warden to one CPU,
# give it the idle I/O class, nice 19 and SCHED_IDLE, and lower its open-file limit: the warden
# takes the programs' user id for an instant to end them (effective uid 65534 on the landed
# code). The main process passes and ends. Some kernels refuse all of these to a process whose
# target's saved uid is root, whatever its effective uid (the 6.18 kernel this was written on
# does), and there the race cannot be won; the reader below still shows the warden unchanged
# whatever the kernel (tried with a warden that changed itself: it is seen).
WARDEN_ATTACK = (
    COMMON
    + """
IOPRIO_SET = {'x86_64': 251, 'aarch64': 30}[platform.machine()]
class Limit(ctypes.Structure):
    _fields_ = [('soft', ctypes.c_ulong), ('hard', ctypes.c_ulong)]
low = Limit(16, 16)
warden = posix.getppid()
def hit(pid):
    for attempt in (lambda: os.sched_setaffinity(pid, {0}),
                    lambda: libc.syscall(IOPRIO_SET, 1, pid, 3 << 13),
                    lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),
                    lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),
                    lambda: libc.prlimit(pid, 7, ctypes.byref(low), None)):
        try:
            attempt()
        except OSError:
            pass
for _ in range(@HELPERS@):
    try:
        if posix.fork() == 0:
            everyone = [int(p) for p in os.listdir('/proc') if p.isdigit()]
            while True:
                for pid in [warden] * 50 + everyone:
                    hit(pid)
    except OSError:
        break
time.sleep(0.3)
"""
)
WARDEN_HELPERS = 8
WARDEN_ROUNDS = 8


@functools.cache
def problem() -> dict:
    return load_official(HUMANEVAL)[0]


def fill(text: str, **values) -> str:
    for name, value in values.items():
        text = text.replace(f"@{name}@", str(value))
    assert not re.search(r"@[A-Z]+@", text), text
    return text


def attacker_completion(attack: str, hold: float, fill_seconds: float) -> str:
    helpers, _ = ATTACKS[attack]
    grab = fill(GRAB[attack], FILL=fill_seconds, CAP=PTY_CAP)
    return problem()["canonical_solution"] + fill(ATTACK, GRAB=grab, HELPERS=helpers, HOLD=hold)


def victim_completion(act: str, delay: float = 0, every: float = 0, until: float = 0) -> str:
    body = textwrap.indent(ACTS[act], "    ")
    return problem()["canonical_solution"] + fill(
        VICTIM, ACT=body, DELAY=delay, EVERY=every, UNTIL=until
    )


def plain_completion(code: str) -> str:
    return problem()["canonical_solution"] + code


def program(completion: str) -> str:
    p = problem()
    return assemble_program(p["prompt"], completion, "", p["test"], p["entry_point"])


def report(kind: str, verdict: str) -> dict | None:
    """An attacker's or reader's report, from its failure message."""
    found = re.fullmatch(rf"failed: {kind} (\{{.*\}})", verdict, re.DOTALL)
    return json.loads(found.group(1)) if found else None


def acted(stderr: str) -> dict:
    """As whom a victim ran, and when each of its acts started and ended (None: it did not end:
    it failed or blocked), from its stderr."""
    user = re.search(r"victim host_uid (-?\d+)", stderr)
    acts = re.findall(r"act ([\d.]+)(?: ([\d.]+);)?", stderr)
    return {
        "host_uid": int(user.group(1)) if user else None,
        "acts": [(float(start), float(end) if end else None) for start, end in acts],
    }


def overlapped(victim: dict, verdict: str, attack: dict | None) -> bool:
    """Whether the victim acted while its attacker held what it took: a pass, with an act that
    started after the attacker had taken it all and ended before the attacker let go; any other
    verdict, with its last act (the one that failed or blocked) started while the attacker held."""
    if not victim["acts"] or attack is None:
        return False
    held = attack["filled"], attack["released"]
    if verdict == "passed":
        return any(held[0] <= start and end and end <= held[1] for start, end in victim["acts"])
    return held[0] <= victim["acts"][-1][0] <= held[1]


def timing(victim: dict, attack: dict | None) -> str:
    """For the table: the victim's acts during the attacker's hold, and when the first began."""
    if not victim["acts"] or attack is None:
        return "(never acted)"
    during = [act for act in victim["acts"] if attack["filled"] <= act[0] <= attack["released"]]
    first = victim["acts"][0][0] - attack["filled"]
    return f"({len(during)} of {len(victim['acts'])} acts in the hold; first at {first:+.1f} s)"


# ---- The host probe ---------------------------------------------------------------------------


def read(path: str) -> str:
    with open(path) as file:
        return file.read()


def sockstat() -> dict[str, int]:
    counters = {}
    for path in ("/proc/net/sockstat", "/proc/net/sockstat6"):
        for line in read(path).splitlines():
            name, *fields = line.split()
            pairs = zip(fields[::2], fields[1::2], strict=False)  # a key without a value: left out
            counters |= {f"{name} {k}": int(v) for k, v in pairs}
    return counters


def pipe_size_as(uid: int) -> int | None:
    """The size of a new pipe made on the host by a process of that uid (forked from this one,
    with no capability left): 65,536 while the uid's pipe pages are under the soft limit, less
    past it. None unless this test runs as root (only root can take another uid)."""
    if os.geteuid() != 0 or uid < 0:
        return None
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.setresuid(uid, uid, uid)
            _, probe = os.pipe()
            os.write(writer, str(fcntl.fcntl(probe, F_GETPIPE_SZ)).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with open(reader, "rb") as answer:
        size = answer.read()
    os.waitpid(child, 0)
    return int(size) if size else None


def host_probe(uids) -> dict:
    """What every container shares, read on the host."""
    return {
        "ptys": int(read("/proc/sys/kernel/pty/nr")),
        "netlink": len(read("/proc/net/netlink").splitlines()) - 1,
        "files": int(read("/proc/sys/fs/file-nr").split()[0]),
        "sockstat": sockstat(),
        "pipes": {uid: pipe_size_as(uid) for uid in sorted(set(uids))},
    }


# How far from the baseline the host may be after an attack. The pty count is the whole host's
# (one table); /proc/net/netlink and the in-use socket counts are the host's network namespace's
# (a container's own sockets show only in its attacker's report), the socket memory counters the
# whole kernel's; other processes on a shared machine (Docker's, its CLI's, other sessions') open
# and close a few of those. The open files are the whole machine's, and the pool's containers,
# Docker and every process on the machine move that count by hundreds (seen here: up to 600
# between two probes a few seconds apart), where the pipe attack holds 2,000 more under runc.
# A program user's pipe size is exact.
SLACK = {"ptys": 2, "netlink": 8, "files": 1024, "sockstat": 64}
SETTLE_SECONDS = 15


def off_baseline(before: dict, now: dict) -> dict:
    off = {}
    for key in ("ptys", "netlink", "files"):
        if abs(now[key] - before[key]) > SLACK[key]:
            off[key] = (before[key], now[key])
    # The memory of every socket family is counted for the whole host (a container's programs'
    # sockets included); the counts of sockets in use are the host's own network namespace's
    # (the host's own processes: Docker, this test), which no container's program reaches.
    for key, value in now["sockstat"].items():
        if not key.endswith(("mem", "memory")):
            continue
        if abs(value - before["sockstat"].get(key, 0)) > SLACK["sockstat"]:
            off[key] = (before["sockstat"].get(key), value)
    for uid, size in now["pipes"].items():
        if size is not None and size != PIPE_BYTES:
            off[f"pipe size of uid {uid}"] = size
    return off


def settled(before: dict, uids) -> tuple[dict, dict]:
    """The host once the attack's programs are gone: back at the baseline within SLACK (waiting
    up to SETTLE_SECONDS for what the kernel frees late), or as it was at the deadline; and what
    is off."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        now = host_probe(uids)
        off = off_baseline(before, now)
        if not off or time.monotonic() > deadline:
            return now, off
        time.sleep(0.5)


def brief(probe: dict) -> str:
    pipes = ",".join(f"{uid}:{size}" for uid, size in probe["pipes"].items())
    return f"ptys={probe['ptys']} netlink={probe['netlink']} files={probe['files']} pipes={pipes}"


# ---- Runtimes ---------------------------------------------------------------------------------


# The `runtime` fixture (runc, and runsc where Docker has it) is conftest.py's.


# ---- The pool: two containers, driven directly ------------------------------------------------

# Victims start this long after their attacker (which takes what it can within FILL_SECONDS),
# each with the reference's kind of time limit; an attacker holds until all its victims are done,
# even those that time out.
FILL_SECONDS = 1.5
LEAD_SECONDS = 2.0
VICTIM_SECONDS = 2.0
VICTIM_WORST_SECONDS = VICTIM_SECONDS + 1.5  # the time-out exception, a second, and the executor


class PoolRunner:
    """Runs programs on one chosen container of a started pool, replacing a container that is
    lost or left residue (as Pool.run does), and remembering that it did."""

    def __init__(self, pool) -> None:
        self.pool = pool
        self.replaced: list[tuple[int, str]] = []

    async def run(self, index: int, text: str, seconds: float) -> Execution | None:
        executor = self.pool.executors[index]
        wall = seconds * WALL_CLOCK_FACTOR
        request = {  # as sandbox/execution.py's `execute` builds it
            "program": text,
            "seconds": seconds,
            "wall_seconds": wall,
            "memory_bytes": DEFAULT_MEMORY_MIB << 20,
            "file_bytes": FILE_BYTES,
            "tasks": PROGRAM_TASKS,
        }
        answer, generation = await executor.run(request, wall + EXECUTOR_GRACE_SECONDS)
        execution = answer if isinstance(answer, Execution) else None
        if execution is None or execution.residue:
            why = f"residue {execution.residue}" if execution else "executor lost or not run"
            self.replaced.append((index, why))
            await self.pool.replace(executor, generation, why)
        return execution


@contextlib.asynccontextmanager
async def started_pool() -> AsyncIterator[PoolRunner]:
    """A started pool of the package's sandbox (under the runtime of HEVAL_SANDBOX_RUNTIME), its
    runner, and the pool stopped afterwards."""
    pool = await new_pool(str(sandbox_compose_file()))
    try:
        await pool.start(EXECUTOR_SOURCE)
        yield PoolRunner(pool)
    finally:
        await pool.stop()


def verdict_of(execution: Execution | None) -> str:
    return execution.verdict if execution else "executor lost"


def stderr_of(execution: Execution | None) -> str:
    return execution.stderr_tail if execution else ""


async def pool_attacks(runtime: str) -> tuple[list[str], list[str]]:
    """Every attack in container 0 with its victims in container 1: the problems found, and the
    table's rows."""
    problems: list[str] = []
    rows: list[str] = []
    async with started_pool() as runner:

        async def users() -> tuple[int, int]:
            """The host uids of the two containers' programs (read again whenever a container
            was replaced: a new container's programs have a uid of their own)."""
            answers = [verdict_of(await runner.run(i, READER, 3)) for i in (0, 1)]
            who = [report("reader", answer) for answer in answers]
            assert None not in who, f"the programs' user could not be read: {answers}"
            rows.append(
                f"pool {runtime} | the containers' programs run as {who[0]['uid']} (host uid "
                f"{who[0]['host_uid']}) and {who[1]['uid']} (host uid {who[1]['host_uid']})"
            )
            # Under gVisor each container has a kernel of its own: no per-user counter is shared
            # whatever the uids, and the map a program reads is its sandbox kernel's.
            if runtime == "runc" and who[0]["host_uid"] == who[1]["host_uid"]:
                problems.append(f"both containers' programs run as host uid {who[0]['host_uid']}")
            return who[0]["host_uid"], who[1]["host_uid"]

        attacker_uid, victim_uid = await users()
        # Counted from here: a container replaced after a victim alone (gVisor's TIME_WAIT
        # residue) is still starting when the next attack's baseline would be read, and its
        # sandbox's file-system proxy opens its thousand-odd cached files during the attack.
        replaced = len(runner.replaced)
        # Each victim alone first: the verdict it must keep while attacked.
        alone = {}
        for _, victims in ATTACKS.values():
            for act in victims:
                text = program(victim_completion(act))
                alone[act] = verdict_of(await runner.run(1, text, VICTIM_SECONDS))
                if not victim_verdict_is_right(act, alone[act]):
                    problems.append(f"{act}, alone: {alone[act]}")
        for attack, (_, victims) in ATTACKS.items():
            if len(runner.replaced) != replaced:
                attacker_uid, victim_uid = await users()
                replaced = len(runner.replaced)
            uids = {NOBODY, attacker_uid, victim_uid}
            hold = LEAD_SECONDS + len(victims) * VICTIM_WORST_SECONDS + 0.5
            text = program(attacker_completion(attack, hold, FILL_SECONDS))
            before = host_probe(uids)
            attacking = asyncio.create_task(runner.run(0, text, hold + 3))
            await asyncio.sleep(LEAD_SECONDS)
            during = host_probe(uids)
            got = {}
            for act in victims:
                execution = await runner.run(1, program(victim_completion(act)), VICTIM_SECONDS)
                got[act] = (verdict_of(execution), acted(stderr_of(execution)))
            attacker = await attacking
            after, off = settled(before, uids)
            took = report("attack", verdict_of(attacker))
            problems += judge_attack(runtime, attack, took, verdict_of(attacker))
            for act, (verdict, when) in got.items():
                if verdict != alone[act]:
                    problems.append(f"{attack}: victim {act!r}: {verdict!r}, alone {alone[act]!r}")
                if not overlapped(when, verdict, took) and not refused_to_all(act, verdict):
                    problems.append(
                        f"{attack}: victim {act!r} did not act while attacked: "
                        f"{when}, attacker {took}"
                    )
                if runtime == "runc" and took and when["host_uid"] == took["host_uid"]:
                    problems.append(
                        f"{attack}: victim and attacker are host uid {took['host_uid']}"
                    )
            # During the attack, the victim's user still gets whole pipes, and no host pty was
            # taken; afterwards the host is as before.
            if during["pipes"].get(victim_uid) not in (PIPE_BYTES, None):
                problems.append(
                    f"{attack}: during it, the victim's uid {victim_uid} got pipes of "
                    f"{during['pipes'][victim_uid]} bytes"
                )
            if during["ptys"] - before["ptys"] > SLACK["ptys"]:
                problems.append(
                    f"{attack}: during it, the host's ptys went from "
                    f"{before['ptys']} to {during['ptys']}"
                )
            if off:
                problems.append(f"{attack}: the host after it is off its baseline: {off}")
            rows.append(
                f"pool {runtime} | {attack} | attacker {summary(took, verdict_of(attacker))} | "
                + "; ".join(f"{act}: {v} {timing(w, took)}" for act, (v, w) in got.items())
                + f" | before {brief(before)} | during {brief(during)} | after {brief(after)}"
            )
        # Allowed (the executor found residue, say gVisor's TIME_WAIT after the socket control),
        # and shown: the verdicts above are what counts.
        rows.append(f"pool {runtime} | containers replaced: {runner.replaced}")
    return problems, rows


def judge_attack(runtime: str, attack: str, took: dict | None, verdict: str) -> list[str]:
    """Whether the attack really ran, and (for the refused kinds) was refused."""
    if took is None:
        return [f"{attack}: the attacker did not report: {verdict}"]
    if took["reported"] != took["helpers"] or took["helpers"] != ATTACKS[attack][0]:
        return [f"{attack}: not every helper of the attacker ran: {took}"]
    if attack in REFUSED_UNDER[runtime]:
        return [] if took["got"] == 0 else [f"{attack}: not refused: the attacker got {took}"]
    if attack in REFUSED:
        return []  # gVisor's own: the host's probes say whether any reached the host
    if runtime == "runc" and not any(AT_THE_LIMIT[attack].search(n) for n in took["notes"]):
        return [f"{attack}: the attacker did not reach its user's limit: {took}"]
    if took["got"] == 0 and not any(re.search(r"EPERM|ENOSYS", n) for n in took["notes"]):
        return [f"{attack}: the attacker took nothing: {took}"]
    return []


def summary(took: dict | None, verdict: str) -> str:
    if took is None:
        return verdict[:120]
    return f"uid {took['uid']} (host {took['host_uid']}) got {took['got']} {took['notes']}"[:300]


def run_attacks(label: str, attacks) -> None:
    """Run a coroutine of attacks, print its table (pytest -s), and fail on any problem."""
    started = time.monotonic()
    problems, rows = asyncio.run(attacks)
    print(f"\n{label}: {time.monotonic() - started:.0f} s")
    for row in rows:
        print(row)
    assert not problems, "\n".join(problems)


def test_no_attack_in_one_pool_container_reaches_another_or_the_host(runtime, monkeypatch):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "2")
    run_attacks(f"pool {runtime}", pool_attacks(runtime))


# Run as root in a gVisor container (the executor's user): the host's cgroups, mounted read-only,
# can be read, for the container's real CPU time, but nothing under them can be written, in any of
# the hierarchies nested in the mount. A write would change the host's cgroups, so what is tried
# changes nothing if it lands: a new empty cgroup (removed at once) and a setting written back with
# the value it has.
WRITE_THROUGH_THE_HOST_CGROUPS = """
import errno, glob, json, os, socket
root, me = "/run/heval/host-cgroup", socket.gethostname()
own = [path for path in glob.glob(f"{root}/**/*{me}*", recursive=True) if os.path.isdir(path)]
counted = (glob.glob(f"{root}/**/*{me}*/cpu*.usage", recursive=True)
           + glob.glob(f"{root}/**/*{me}*/cpu.stat", recursive=True))
attempts = {}
def attempt(what, action):
    try:
        action()
        attempts[what] = "done"
    except OSError as error:
        attempts[what] = errno.errorcode[error.errno]
for hierarchy in sorted(glob.glob(f"{root}/*/")) + [root + "/"]:
    probe = hierarchy + "heval-probe"
    attempt("mkdir " + probe, lambda: (os.mkdir(probe), os.rmdir(probe)))
for folder in own:
    setting = folder + "/notify_on_release"
    if os.path.exists(setting):
        value = open(setting).read()
        attempt("write " + setting, lambda: open(setting, "w").write(value))
print(json.dumps({"own": own, "readable": [open(path).read()[:40] for path in counted],
                  "attempts": attempts}))
"""


@pytest.mark.parametrize("runtime", ["runsc"], indirect=True)
def test_root_in_a_gvisor_container_reads_but_cannot_write_the_hosts_cgroups(runtime):
    async def as_root() -> dict:
        async with started_pool() as runner:
            container = runner.pool.executors[0].container
            command = ["docker", "exec", "-u", "0", container, "python3", "-c"]
            answer = subprocess.run(
                [*command, WRITE_THROUGH_THE_HOST_CGROUPS], capture_output=True, text=True
            )
            assert answer.returncode == 0, answer.stderr
            return json.loads(answer.stdout)

    found = asyncio.run(as_root())
    print(json.dumps(found, indent=1))
    assert found["own"] and found["readable"], "the executor cannot find its container's counter"
    assert len(found["attempts"]) > len(found["own"]), found  # every hierarchy was tried
    assert set(found["attempts"].values()) == {"EROFS"}, found["attempts"]


# ---- The warden -------------------------------------------------------------------------------


def scheduling(attributes: dict) -> dict:
    """What a program inherits from the warden (its user, in its status, is its container's)."""
    return {key: value for key, value in attributes.items() if key != "status"}


async def warden_attacks(runtime: str) -> tuple[list[str], list[str]]:
    """Rounds of the attack on the warden, each followed in the same container by the reader:
    the problems found, and the table's rows."""
    problems: list[str] = []
    rows: list[str] = []
    async with started_pool() as runner:
        answer = verdict_of(await runner.run(0, READER, 3))
        before = report("reader", answer)
        if before is None:
            return [f"the warden's attributes could not be read: {answer}"], rows
        rows.append(f"warden {runtime} | before: {before['warden']}")
        attack = program(plain_completion(fill(WARDEN_ATTACK, HELPERS=WARDEN_HELPERS)))
        verdicts = []
        for n in range(WARDEN_ROUNDS):
            execution = await runner.run(0, attack, 3)
            verdicts.append(verdict_of(execution))
            residue = execution.residue if execution else {}
            answer = verdict_of(await runner.run(0, READER, 3))
            after = report("reader", answer)
            if after is None:
                problems.append(f"round {n}: the warden's attributes could not be read: {answer}")
                continue
            changed = {
                key: (value, after["warden"].get(key))
                for key, value in before["warden"].items()
                if after["warden"].get(key) != value
            }
            rows.append(
                f"warden {runtime} | round {n}: attacker {verdicts[-1]}, residue {residue}, "
                f"warden {changed or 'as before'}"
            )
            if changed:
                problems.append(f"round {n}: the warden changed: {changed} (residue {residue})")
            if scheduling(after["self"]) != scheduling(before["self"]):
                problems.append(
                    f"round {n}: programs now start with {after['self']}, not {before['self']}"
                )
        if set(verdicts) != {"passed"}:
            problems.append(f"the attacker's verdicts: {verdicts} (it passes its tests)")
        rows.append(f"warden {runtime} | containers replaced: {runner.replaced}")
    return problems, rows


def test_the_warden_is_what_it_was_after_programs_that_attack_it(runtime, monkeypatch):
    monkeypatch.setenv("HEVAL_POOL_SIZE", "1")
    run_attacks(f"warden {runtime}", warden_attacks(runtime))


# ---- Inspect's docker sandbox: a container per sample, all at once -----------------------------

# Every program's time limit. Inspect starts the samples' containers together, but not at the
# same instant (up to 10 s apart here under gVisor): attackers hold from what they took until
# DOCKER_HOLD s after they started; victims act DOCKER_DELAY s after they started, and again every
# DOCKER_EVERY s until DOCKER_HOLD s (each act's window is checked against its attacker's hold).
DOCKER_TIMEOUT = 20
DOCKER_HOLD = 18.0
DOCKER_DELAY = 2.0
DOCKER_EVERY = 0.5
# Long enough for an attacker to reach its user's limit while the other samples' containers start
# beside it: 3 s left one of 2026-12-07's runs 86,016 pending signals short of the 96,553 limit.
DOCKER_FILL_SECONDS = 6.0


class HostSampler:
    """The host, read every half second while the eval runs: the most ptys, netlink sockets and
    open files seen, and the smallest pipe nobody got."""

    def __init__(self) -> None:
        self.most = {"ptys": 0, "netlink": 0, "files": 0}
        self.smallest_pipe: int | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self) -> None:
        while not self.stop.wait(0.5):
            probe = host_probe([NOBODY])
            for key in self.most:
                self.most[key] = max(self.most[key], probe[key])
            size = probe["pipes"][NOBODY]
            if size is not None:
                self.smallest_pipe = min(size, self.smallest_pipe or size)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def test_no_attack_in_one_docker_sandbox_reaches_another_or_the_host(
    runtime, tmp_path, monkeypatch
):
    attackers = {f"attack/{attack}": attack for attack in ATTACKS}
    victims = {f"victim/{act}": attack for attack, (_, acts) in ATTACKS.items() for act in acts}
    rows = [
        (sample_id, attacker_completion(attack, DOCKER_HOLD, DOCKER_FILL_SECONDS))
        for sample_id, attack in attackers.items()
    ]
    rows += [
        (
            sample_id,
            victim_completion(sample_id.split("/", 1)[1], DOCKER_DELAY, DOCKER_EVERY, DOCKER_HOLD),
        )
        for sample_id in victims
    ]
    base = problem()
    problem_file, samples_file = tmp_path / "problems.jsonl", tmp_path / "samples.jsonl"
    problem_file.write_text("".join(json.dumps(base | {"task_id": t}) + "\n" for t, _ in rows))
    samples_file.write_text(
        "".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in rows)
    )
    # All at once: Inspect bounds its docker CLI calls (a program's `docker exec` among them) and
    # its subprocesses by the CPUs, which would run these samples a few at a time.
    monkeypatch.setenv("INSPECT_DOCKER_CLI_CONCURRENCY", str(3 * len(rows)))
    before = host_probe([NOBODY])
    started = time.monotonic()
    with HostSampler() as during:
        [log] = inspect_eval(
            humaneval(
                problem_file=str(problem_file),
                samples=str(samples_file),
                sandbox="docker",
                timeout=DOCKER_TIMEOUT,
            ),
            model="none",
            log_dir=str(tmp_path / "logs"),
            display="none",
            max_samples=len(rows),
            max_sandboxes=len(rows),
            max_subprocesses=3 * len(rows),
        )
    took_seconds = time.monotonic() - started
    after, off = settled(before, [NOBODY])

    # Fail-on-error is on (Inspect's default): no attack may turn into a sample error.
    assert log.status == "success", log.error
    scores = {s.id: s.scores["unit_tests"] for s in log.samples}
    verdict = {sample_id: score.metadata["verdict"] for sample_id, score in scores.items()}
    problems = []
    took = {}
    for sample_id, attack in attackers.items():
        took[attack] = report("attack", verdict[sample_id])
        problems += judge_attack(runtime, attack, took[attack], verdict[sample_id])
    uids = [t["host_uid"] for t in took.values() if t]
    when = {}
    for sample_id, attack in victims.items():
        act = sample_id.split("/", 1)[1]
        got = verdict[sample_id]
        when[sample_id] = acted(scores[sample_id].explanation or "")
        if not victim_verdict_is_right(act, got):
            problems.append(f"{attack}: victim {act!r}: {got!r}")
        if not overlapped(when[sample_id], got, took[attack]) and not refused_to_all(act, got):
            problems.append(
                f"{attack}: victim {act!r} did not act while attacked: {when[sample_id]}, "
                f"attacker {took[attack]}"
            )
        uids.append(when[sample_id]["host_uid"])
    if runtime == "runc" and len(set(uids)) != len(uids):
        problems.append(f"containers share a host uid: {sorted(uids)}")
    if during.most["ptys"] - before["ptys"] > SLACK["ptys"]:
        problems.append(f"the host's ptys went from {before['ptys']} to {during.most['ptys']}")
    if off:
        problems.append(f"the host after the run is off its baseline: {off}")
    print(
        f"\ndocker {runtime}: {took_seconds:.0f} s; host before {brief(before)}, during (most) "
        f"{during.most} smallest pipe of uid {NOBODY} {during.smallest_pipe}, "
        f"after {brief(after)}"
    )
    for attack in ATTACKS:
        print(
            f"docker {runtime} | {attack} | attacker {summary(took[attack], '')} | "
            + "; ".join(
                f"{v.split('/', 1)[1]}: {verdict[v]} {timing(when[v], took[attack])}"
                for v, a in victims.items()
                if a == attack
            )
        )
    assert not problems, "\n".join(problems)
