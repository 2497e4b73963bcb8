"""The instructor's page (book/instructors.md) lists every chapter's exercises and nothing that is not there."""
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LABEL = re.compile(r"```\{exercise\}[^\n]*\n:label: ([\w-]+)")


def exercise_labels() -> dict[str, set[str]]:
    labels = {}
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]*.ipynb")):
        text = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown")
        labels[path.stem] = set(LABEL.findall(text))
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
