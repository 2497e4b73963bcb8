"""Result tables passed between executed chapters: a glued table reads back unchanged from the executed copy,
with its run record; a missing copy, a missing table and copies made with other settings are refused."""


import nbformat
import pandas as pd
import pytest

from mtllib import checks
from mtllib.book import results


def executed(tmp_path, name, glued: dict, record: dict | None) -> None:
    """An executed copy in ``tmp_path/book`` whose outputs are what ``myst_nb.glue`` writes for ``glued``."""
    outputs = []

    def fake_glue(key, value, display=False):  # what myst_nb.glue(display=False) records for a string
        outputs.append(nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": repr(value)},
                                              metadata={"scrapbook": {"mime_prefix": "application/papermill.record/", "name": key}}))

    for key, frame in glued.items():
        results.glue_frame(key, frame, glue=fake_glue)
    cell = nbformat.v4.new_code_cell("glue(...)", outputs=outputs)
    nb = nbformat.v4.new_notebook(cells=[cell], metadata={"mtllib": record} if record else {})
    (tmp_path / "book").mkdir(exist_ok=True)
    nbformat.write(nb, tmp_path / "book" / f"{name}.ipynb")


SCORES = pd.DataFrame({"scheme": ["Baseline", "Only-SL"], "target": ["tweet-pos", "tweet-pos"], "seed": [0, 0], "score": [61.25, 63.5],
                       "learned": [True, False]})


def test_a_glued_table_reads_back_unchanged_with_its_run_record(tmp_path):
    record = {"profile": "cpu", "commit": "abc1234", "parameters": {"seeds": [0, 1]}}
    executed(tmp_path, "09a", {"scores": SCORES, "other": SCORES.head(1)}, record)
    path = results.executed_copy("09a", tmp_path / "book")
    pd.testing.assert_frame_equal(results.read_frame(path, "scores"), SCORES)
    pd.testing.assert_frame_equal(results.read_frame(path, "other"), SCORES.head(1))
    assert results.read_record(path) == record


def test_a_missing_copy_a_missing_table_and_a_copy_without_record_are_refused(tmp_path):
    with pytest.raises(checks.BadInput, match="make run NB=09z"):
        results.executed_copy("09z", tmp_path / "book")
    executed(tmp_path, "09a", {"scores": SCORES}, None)
    path = results.executed_copy("09a", tmp_path / "book")
    with pytest.raises(checks.BadInput, match="no table glued as 'costs'"):
        results.read_frame(path, "costs")
    with pytest.raises(checks.BadInput, match="no run record"):
        results.read_record(path)


def test_copies_with_other_settings_are_refused():
    a = {"profile": "cpu", "parameters": {"seeds": [0, 1], "groups": {"SL": ["bbc-pos"]}}}
    b = {"profile": "cpu", "parameters": {"seeds": [0, 1], "groups": {"SL": ["bbc-pos"]}}}
    results.check_same({"a": a, "b": b}, ["seeds", "groups"])
    with pytest.raises(checks.BadInput, match="disagree on 'seeds'"):
        results.check_same({"a": a, "b": {**b, "parameters": {**b["parameters"], "seeds": [0]}}}, ["seeds", "groups"])
    with pytest.raises(checks.BadInput, match="disagree on 'profile'"):
        results.check_same({"a": a, "b": {**b, "profile": "smoke"}}, ["seeds"])
