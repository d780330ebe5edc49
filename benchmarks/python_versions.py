"""Does the host's Python change what the package makes of code? The variants and the reading of
chat answers are built with the host's `tokenize` and `ast`, which change between versions; the
programs themselves run in the sandbox's Python. Run `write` under each interpreter (each with the
package installed), then `compare`:

    python3.11 benchmarks/python_versions.py write out-3.11.json
    python3.13 benchmarks/python_versions.py write out-3.13.json
    python benchmarks/python_versions.py compare out-3.11.json out-3.13.json

`write` records every variant of every official task, and the middle read from ten answers to
each of up to 400 tasks drawn (seeded) from each file: the whole program, prose around a fence, the
canonical gap cut off at a random point (with and without an unclosed fence), three f-strings,
the suffix repeated, an unterminated docstring, and a raw FIM completion cut at its stop token.
`compare` prints how many differ, by kind and answer style, with a few examples; it exits 1 if
any differ.
"""

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

from heval_inspect.data import HUMANEVAL, SUBSETS, load_official
from heval_inspect.extract import middle_from_chat, middle_from_fim
from heval_inspect.variants import make_variant

TASKS_PER_FILE = 400
F_STRINGS = [
    '    note = f"{len(str(1))!r:>{3}}"\n',
    "    tag = f'{\"x\"}'\n",
    '    s = f"{\'a\' + "b"}"\n',  # the same quotes inside: syntax from Python 3.12 on only
]


def answers(record: dict, rng: random.Random, index: int) -> list[str]:
    prefix, middle = record["prompt"], record["canonical_solution"]
    suffix = record.get("suffix", "")
    cut = middle[: rng.randrange(len(middle) + 1)]
    extra = F_STRINGS[index % len(F_STRINGS)]
    return [
        f"```python\n{prefix}{middle}{suffix}```\n",
        f"Here is the code:\n```python\n{middle}```\nIt works.",
        f"```\n{middle}{suffix}\n```",
        cut,
        f"```python\n{cut}",
        f"```python\n{extra}{middle}```",
        f"```python\n{prefix}{extra}{middle}{suffix}\n\nprint({record['entry_point']}(1))\n```",
        middle + "\n" + suffix + "\n" + suffix,
        f'```python\n{middle}"""unterminated\n```',
    ]


def write(path: Path) -> None:
    rng = random.Random(7)
    out: dict[str, str | dict] = {}
    for name, file in [("humaneval", HUMANEVAL), *SUBSETS.items()]:
        records = load_official(file)
        for record in records:
            for variant in ("renamed", "reformatted"):
                key = f"variant|{variant}|{record['task_id']}"
                out[key] = make_variant(record, variant).record
        for index, record in enumerate(rng.sample(records, min(len(records), TASKS_PER_FILE))):
            prefix, suffix = record["prompt"], record.get("suffix", "")
            for style, answer in enumerate(answers(record, rng, index)):
                out[f"chat|{style}|{name}|{record['task_id']}"] = middle_from_chat(
                    answer, prefix, suffix
                )
            fim = record["canonical_solution"] + "<|endoftext|>junk"
            out[f"fim|-|{name}|{record['task_id']}"] = middle_from_fim(fim, ("<|endoftext|>",))
    path.write_text(json.dumps({"python": sys.version.split()[0], "results": out}))
    print(f"{path}: {len(out)} results under Python {sys.version.split()[0]}")


def compare(first: Path, second: Path) -> int:
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    keys = a["results"].keys() | b["results"].keys()
    differ = sorted(k for k in keys if a["results"].get(k) != b["results"].get(k))
    kinds = Counter(" ".join(k.split("|")[:2]) for k in keys)
    print(f"Python {a['python']} against {b['python']}: {len(differ)} of {len(keys)} differ")
    for kind, count in sorted(Counter(" ".join(k.split("|")[:2]) for k in differ).items()):
        print(f"  {kind}: {count} of {kinds[kind]}")
    for key in differ[:5]:
        print(f"  {key}:\n    {a['results'].get(key)!r:.160}\n    {b['results'].get(key)!r:.160}")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("write").add_argument("out", type=Path)
    both = commands.add_parser("compare")
    both.add_argument("first", type=Path)
    both.add_argument("second", type=Path)
    arguments = parser.parse_args()
    if arguments.command == "write":
        write(arguments.out)
        return 0
    return compare(arguments.first, arguments.second)


if __name__ == "__main__":
    sys.exit(main())
