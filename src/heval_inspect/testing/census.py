"""A census of programs written as models write them, to hold the sandbox's verdicts to the
reference worker's.

Each program is a HumanEval problem's prompt completed with its canonical solution put to work in
one of the ways chat models lay out their answers: in a thread, a thread pool, 8 threads, a
queue, asyncio, a temporary file, numpy, a socket pair, a loopback TCP connection, deep recursion,
large output, a process pool (which the reference's guard breaks), and more (STYLES). Each call of
the function does that again, and a test calls it up to 100 times (HumanEval/32), so each
style's work is small: far from the time limit under runc and gVisor alike (measured: at most
about a third of it; docs/benchmarks.md), which the reference's four workers would otherwise
reach on a busy machine (its verdict would then depend on the load). Its wrong twin returns a
value changed by `_wrong`, and a few more are wrong by time (TIMED). The verdict each should get
is the reference's, computed by its own command
(heval_inspect.testing.reference_world.reference_results), not assumed: a style the guard breaks
(`multiprocessing.Pool`, `subprocess`) fails there, and must fail here.
"""

import ast
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

# The body after the nested `_solve` (the canonical solution under another name): `{call}` is the
# call of `_solve` with the function's own parameters, `{value}` the same or, in a wrong twin,
# `_wrong(...)` of it.
STYLES = {
    "plain": "return {value}\n",
    "a thread": (
        "import threading\nresult = []\n"
        "thread = threading.Thread(target=lambda: result.append({value}))\n"
        "thread.start()\nthread.join()\nreturn result[0]\n"
    ),
    "a thread pool": (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(max_workers=4) as pool:\n"
        "    return pool.submit(lambda: {value}).result()\n"
    ),
    "the default thread pool": (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor() as pool:\n"
        "    results = list(pool.map(lambda _: {value}, range(8)))\n"
        "return results[0]\n"
    ),
    "8 threads": (
        "import threading\nresults = [None] * 8\n"
        "def work(i):\n    results[i] = {value}\n"
        "threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]\n"
        "for t in threads:\n    t.start()\nfor t in threads:\n    t.join()\n"
        "return results[0]\n"
    ),
    "a queue between threads": (
        "import queue, threading\nq = queue.Queue()\n"
        "threading.Thread(target=lambda: q.put({value}), daemon=True).start()\n"
        "return q.get(timeout=2)\n"
    ),
    "asyncio": (
        "import asyncio\nasync def main():\n    await asyncio.sleep(0.001)\n"
        "    return await asyncio.to_thread(lambda: {value})\n"
        "return asyncio.run(main())\n"
    ),
    "asyncio.gather": (
        "import asyncio\nasync def one():\n    await asyncio.sleep(0)\n    return {value}\n"
        "async def main():\n    return await asyncio.gather(one(), one(), one())\n"
        "return asyncio.run(main())[0]\n"
    ),
    "a named temporary file": (
        "import ast, tempfile\nwith tempfile.NamedTemporaryFile('w+') as f:\n"
        "    f.write(repr({value}))\n    f.flush()\n    f.seek(0)\n"
        "    return ast.literal_eval(f.read())\n"
    ),
    "mkstemp": (
        "import ast, os, tempfile\nfd, path = tempfile.mkstemp(suffix='.txt')\n"
        "with os.fdopen(fd, 'w') as f:\n    f.write(repr({value}))\n"
        "with open(path) as f:\n    return ast.literal_eval(f.read())\n"
    ),
    "a temporary folder": (
        "import os, tempfile\nwith tempfile.TemporaryDirectory() as folder:\n"
        "    open(os.path.join(folder, 'x'), 'w').close()\n    return {value}\n"
    ),
    "numpy": (
        "import numpy as np\nweights = np.arange(12).reshape(3, 4)\n"
        "assert int(np.linalg.matrix_rank(weights)) == 2\nreturn {value}\n"
    ),
    "a timer": (
        "import time\nstart = time.perf_counter()\ntime.sleep(0.005)\nvalue = {value}\n"
        "assert time.perf_counter() - start >= 0.005\nreturn value\n"
    ),
    "4 MiB held a moment": (
        "block = bytearray(4 << 20)\nvalue = {value}\ndel block\nreturn value\n"
    ),
    "a socket pair": (
        "import pickle, socket\na, b = socket.socketpair()\nwith a, b:\n"
        "    a.sendall(pickle.dumps({value}))\n    a.shutdown(socket.SHUT_WR)\n"
        "    data = b''\n    while chunk := b.recv(65536):\n        data += chunk\n"
        "return pickle.loads(data)\n"
    ),
    "loopback TCP": (
        "import pickle, socket, threading\nserver = socket.create_server(('127.0.0.1', 0))\n"
        "port = server.getsockname()[1]\n"
        "def serve():\n    conn, _ = server.accept()\n    with conn:\n"
        "        conn.sendall(pickle.dumps({value}))\n"
        "threading.Thread(target=serve).start()\n"
        "with socket.create_connection(('127.0.0.1', port)) as client:\n"
        "    data = b''\n    while chunk := client.recv(65536):\n        data += chunk\n"
        "server.close()\nreturn pickle.loads(data)\n"
    ),
    "deep recursion": (
        "import sys\nsys.setrecursionlimit(10000)\n"
        "def down(n):\n    return 0 if n == 0 else 1 + down(n - 1)\n"
        "assert down(3000) == 3000\nreturn {value}\n"
    ),
    "large output": "for i in range(10_000):\n    print('line', i)\nreturn {value}\n",
    "writes to stderr": (
        "import os, sys\nsys.stderr.write('working\\n')\nos.write(2, b'.' * 100_000)\n"
        "return {value}\n"
    ),
    "a multiprocessing queue": (
        "import multiprocessing\nq = multiprocessing.Queue()\nq.put({value})\n"
        "return q.get(timeout=2)\n"
    ),
    "a multiprocessing pool": (
        "import multiprocessing\nwith multiprocessing.Pool(2) as pool:\n"
        "    return pool.apply(_solve, {arguments})\n"
    ),
    "a process pool": (
        "from concurrent.futures import ProcessPoolExecutor\n"
        "with ProcessPoolExecutor(2) as pool:\n"
        "    return pool.submit(_solve, *{arguments}).result()\n"
    ),
    "a subprocess": (
        "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'pass'], check=True)\n"
        "return {value}\n"
    ),
    "the working folder": "import os\nos.getcwd()\nreturn {value}\n",
    "logging and warnings": (
        "import logging, warnings\nlogging.basicConfig(level=logging.INFO)\n"
        "logging.info('solving')\nwarnings.warn('slow path')\nreturn {value}\n"
    ),
    "who and when": (
        "import datetime, getpass, random\nrandom.seed(0)\n"
        "assert getpass.getuser() and datetime.datetime.now().year > 2000\nreturn {value}\n"
    ),
}
# Wrong by time, whatever they compute.
TIMED = {
    "sleeps past the limit": "import time\ntime.sleep(5)\nreturn {value}\n",
    "loops": "while True:\n    pass\n",
    "joins a thread that never ends": (
        "import threading\nthreading.Thread(target=threading.Event().wait).start()\n"
        "for t in threading.enumerate():\n"
        "    if t is not threading.current_thread():\n        t.join()\n"
        "return {value}\n"
    ),
    "sleeps while a thread floods stderr": (
        "import os, threading, time\n"
        "def flood():\n    while True:\n        os.write(2, b'e' * 65536)\n"
        "threading.Thread(target=flood, daemon=True).start()\ntime.sleep(5)\nreturn {value}\n"
    ),
    "awaits past the limit": (
        "import asyncio\nasync def main():\n    await asyncio.sleep(5)\n"
        "asyncio.run(main())\nreturn {value}\n"
    ),
}
# A value changed so that a test that checks it fails.
WRONG = (
    "def _wrong(value):\n"
    "    if isinstance(value, bool):\n        return not value\n"
    "    if isinstance(value, (int, float)):\n        return value + 1\n"
    "    if isinstance(value, str):\n        return value + '?'\n"
    "    if isinstance(value, (list, tuple)):\n        return type(value)([*value, None])\n"
    "    return 0 if value is None else None\n"
)


def parameters(problem: Mapping[str, Any]) -> list[str]:
    """The names of the entry point's parameters, from the prompt."""
    tree = ast.parse(problem["prompt"] + "    pass\n")
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == problem["entry_point"]:
            return [argument.arg for argument in node.args.args]
    raise ValueError(f"{problem['task_id']}: no {problem['entry_point']} in its prompt")


def completion(problem: Mapping[str, Any], style: str, wrong: bool) -> str:
    """The function's body: its canonical solution as `_solve`, then the style's body."""
    names = parameters(problem)
    call = f"_solve({', '.join(names)})"
    arguments = f"({', '.join(names)}{',' if len(names) == 1 else ''})"
    body = (STYLES | TIMED)[style].format(
        value=f"_wrong({call})" if wrong else call, arguments=arguments
    )
    solve = f"def _solve({', '.join(names)}):\n" + textwrap.indent(
        textwrap.dedent(problem["canonical_solution"]), "    "
    )
    return textwrap.indent(solve + (WRONG if wrong else "") + body, "    ")


def usable(problem: Mapping[str, Any]) -> bool:
    """A canonical solution that does not call its own function (each call would run the
    style's body again) and defines no function of the prompt's again."""
    return problem["entry_point"] not in problem["canonical_solution"]


def census(
    problems: Sequence[Mapping[str, Any]], count: int = 10, timed: int = 2
) -> dict[str, tuple[Mapping[str, Any], str]]:
    """Every style and its wrong twin over `count` usable problems spread over the set, and every
    timed program over the first `timed` of them (each costs its whole time limit): {task id:
    (problem, completion)}, the task id "problem/style" or "problem/style/wrong"."""
    candidates = [problem for problem in problems if usable(problem)]
    chosen = candidates[:: max(1, len(candidates) // count)][:count]
    programs: dict[str, tuple[Mapping[str, Any], str]] = {}
    for number, problem in enumerate(chosen):
        for style in STYLES:
            programs[f"{problem['task_id']}/{style}"] = (
                problem,
                completion(problem, style, wrong=False),
            )
            programs[f"{problem['task_id']}/{style}/wrong"] = (
                problem,
                completion(problem, style, wrong=True),
            )
        for style in TIMED if number < timed else ():
            programs[f"{problem['task_id']}/{style}"] = (
                problem,
                completion(problem, style, wrong=False),
            )
    return programs
