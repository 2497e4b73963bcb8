"""The instructor's page (book/instructors.md) lists every chapter's exercises and nothing that is not there."""
import re
from pathlib import Path

import nbformat

from mtllib.book import runner

ROOT = Path(__file__).resolve().parents[2]
LABEL = re.compile(r"```\{exercise\}[^\n]*\n:label: ([\w-]+)")


def exercise_labels() -> dict[str, set[str]]:
    """Every chapter's exercise labels, a page made from another source (notebooks/pages.yml) with its own."""
    project, labels = runner.Project(), {}
    for name in project.notebook_names():
        nb = nbformat.read(project.source(name), as_version=4)
        if project.source_name(name) != name:
            runner.relabel(nb, project.source_name(name), name)
        labels[name] = set(LABEL.findall("".join(c.source for c in nb.cells if c.cell_type == "markdown")))
    return labels


def test_every_chapter_has_three_to_five_exercises():
    counts = {nb: len(found) for nb, found in exercise_labels().items()}
    assert all(3 <= n <= 5 for n in counts.values()), counts


def test_the_instructors_page_links_every_exercise_and_only_existing_ones():
    page = (ROOT / "book" / "instructors.md").read_text()
    linked = set(re.findall(r"\{ref\}`(?:[^`<]*<)?(ex-[\w-]+)>?`", page))
    existing = set().union(*exercise_labels().values())
    assert existing - linked == set(), "exercises missing from the instructor's page"
    assert linked - existing == set(), "the instructor's page links exercises that do not exist"


def test_the_instructors_page_has_a_row_and_a_run_time_for_every_chapter():
    page = (ROOT / "book" / "instructors.md").read_text()
    for nb in exercise_labels():
        assert f"{{doc}}`{nb}`" in page, nb
        assert f"{nb}.ipynb::run_minutes" in page, nb
