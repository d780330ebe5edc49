"""The documentation shows what the code does (the exact prompts, every FIM family's row, every
figure and blend), its links lead somewhere, and the README stays a front page."""

import re
from pathlib import Path

from heval_inspect.prompts import COMPLETE_INSTRUCTION, FIM_FORMATS, GAP, INFILL_INSTRUCTION

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PROMPTS = (ROOT / "docs" / "prompts.md").read_text(encoding="utf-8")
METRICS = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
# A Markdown link or image: [text](target), the text maybe over several lines.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCED_BLOCK = re.compile(r"^(`{3,}).*?^\1\s*$", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`+[^`]*`+")


def test_docs_show_the_exact_chat_prompts():
    assert INFILL_INSTRUCTION.format(prefix="{prefix}", suffix="{suffix}", gap=GAP) in PROMPTS
    assert COMPLETE_INSTRUCTION.format(prefix="{prefix}") in PROMPTS


def test_docs_fim_table_has_every_family_with_its_layout_order_and_stop_tokens():
    # GitHub tables need the pipes inside code spans escaped.
    rows = {
        line.split(" | ")[0].strip("| `"): line.replace("\\|", "|")
        for line in PROMPTS.splitlines()
        if line.startswith("| `") and "{prefix}" in line and " order " not in line
    }
    assert set(rows) == set(FIM_FORMATS)
    for name, row in FIM_FORMATS.items():
        assert f"`{row.layout}` | {row.order} | " in rows[name]
        assert rows[name].endswith(", ".join(f"`{stop}`" for stop in row.stop) + " |")


def test_docs_tables_name_every_figure_and_blend_the_metric_reports():
    from heval_inspect.metrics import HEADLINE_BLEND, HEADLINE_STDERR, MEAN_FIGURES

    figures = ["pass@k", *MEAN_FIGURES, "..._stderr", HEADLINE_STDERR]
    for name in figures:
        assert f"| `{name}` |" in METRICS, name
    for prefix in (HEADLINE_BLEND, "mean_of_subsets/", "problem_macro/"):
        assert f"| `{prefix}` |" in METRICS, prefix
    assert f"| `{HEADLINE_BLEND}` | each task counts the same | **the primary figure**" in METRICS


def test_changelog_has_every_task_version():
    from heval_inspect.tasks import HUMANEVAL_VERSION, INFILLING_VERSION

    changelog = (Path(__file__).parents[1] / "CHANGELOG.md").read_text()
    assert f"`humaneval` {HUMANEVAL_VERSION}" in changelog
    assert f"`humaneval_infilling` {INFILLING_VERSION}" in changelog


def test_eval_yaml_lists_every_task_with_its_size_and_the_task_version():
    import yaml

    from heval_inspect.tasks import HUMANEVAL_VERSION, INFILLING_VERSION

    from .test_tasks import TASKS

    listing = yaml.safe_load(
        (Path(__file__).parents[1] / "src" / "heval_inspect" / "eval.yaml").read_text()
    )
    assert {t["name"]: t["dataset_samples"] for t in listing["tasks"]} == TASKS
    assert listing["version"] == HUMANEVAL_VERSION == INFILLING_VERSION
    assert {"title", "description", "group", "contributors"} <= set(listing)


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation but '-' and '_' dropped, spaces '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    headings = re.findall(r"^#{1,6} +(.+?) *#* *$", FENCED_BLOCK.sub("", text), re.MULTILINE)
    seen: dict[str, int] = {}
    anchors = set()
    for heading in headings:
        anchor = _anchor(heading)
        # A repeated heading gets -1, -2, ... as on GitHub.
        anchors.add(f"{anchor}-{seen[anchor]}" if anchor in seen else anchor)
        seen[anchor] = seen.get(anchor, 0) + 1
    return anchors


def test_every_relative_link_leads_to_a_file_and_heading_that_exist():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert len(pages) > 1
    broken = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for target in LINK.findall(CODE_SPAN.sub("", FENCED_BLOCK.sub("", text))):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and (
                linked.suffix != ".md" or anchor not in _anchors(linked.read_text(encoding="utf-8"))
            ):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken


def test_the_anchor_rule_is_githubs():
    assert _anchor("Task arguments (`-T name=value`)") == "task-arguments--t-namevalue"
    assert _anchor("Where an eval process's time goes") == "where-an-eval-processs-time-goes"
    assert _anchor("The split: `-T shard=i/n`") == "the-split--t-shardin"


def test_the_readme_is_a_front_page():
    assert len(README.splitlines()) <= 250
    # The error message for a bad task argument points at this section.
    assert "\n### Task arguments" in README
    # Its Documentation list links every page.
    linked = set(LINK.findall(README))
    assert {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")} <= linked


def test_every_task_argument_the_docs_pass_is_one_the_task_takes():
    # What Inspect itself reads: the signature built at import (arguments.takes_task_arguments), not
    # the source's `def`, which takes one TaskSettings.
    import inspect as python_inspect

    import heval_inspect

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    commands = [
        command
        for page in pages
        for command in page.read_text(encoding="utf-8").replace("\\\n", " ").splitlines()
        if re.search(r"inspect eval(-set)? .*heval_inspect/\w+", command)
    ]
    passed = [
        (task, name)
        for command in commands
        for task in re.findall(r"heval_inspect/(\w+)", command)
        for name in re.findall(r"-T ['\"]?(\w+)=", command)
        if task.startswith("humaneval")  # a task, not a solver or scorer of the package
    ]
    assert {name for _, name in passed} >= {"k", "fim_format", "samples"}, passed
    unknown = [
        (task, name)
        for task, name in passed
        if name not in python_inspect.signature(getattr(heval_inspect, task)).parameters
    ]
    assert not unknown, unknown
