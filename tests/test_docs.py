"""The README shows what the code does: the exact prompts and every FIM family's row."""

from pathlib import Path

from heval_inspect.prompts import COMPLETE_INSTRUCTION, FIM_FORMATS, GAP, INFILL_INSTRUCTION

README = (Path(__file__).parents[1] / "README.md").read_text()


def test_readme_shows_the_exact_chat_prompts():
    assert INFILL_INSTRUCTION.format(prefix="{prefix}", suffix="{suffix}", gap=GAP) in README
    assert COMPLETE_INSTRUCTION.format(prefix="{prefix}") in README


def test_readme_fim_table_has_every_family_with_its_layout_order_and_stop_tokens():
    # GitHub tables need the pipes inside code spans escaped.
    rows = {
        line.split(" | ")[0].strip("| `"): line.replace("\\|", "|")
        for line in README.splitlines()
        if line.startswith("| `") and "{prefix}" in line and " order " not in line
    }
    assert set(rows) == set(FIM_FORMATS)
    for name, row in FIM_FORMATS.items():
        assert f"`{row.layout}` | {row.order} | " in rows[name]
        assert rows[name].endswith(", ".join(f"`{stop}`" for stop in row.stop) + " |")


def test_readme_tables_name_every_figure_and_blend_the_metric_reports():
    from heval_inspect.metrics import HEADLINE_BLEND, HEADLINE_STDERR, MEAN_FIGURES

    figures = ["pass@k", *MEAN_FIGURES, "..._stderr", HEADLINE_STDERR, "samples"]
    for name in figures:
        assert f"| `{name}` |" in README, name
    for prefix in (HEADLINE_BLEND, "mean_of_subsets/", "problem_macro/"):
        assert f"| `{prefix}` |" in README, prefix
    assert f"| `{HEADLINE_BLEND}` | each task counts the same | **the primary figure**" in README


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
