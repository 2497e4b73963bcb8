"""Result tables passed between executed chapters: a glued table reads back unchanged from the executed copy,
with its run record; a missing copy, a missing table and copies made with other settings are refused."""


import dataclasses

import pandas as pd
import pytest

from mtllib import checks
from mtllib.book import results
from tiny import PreparedSizes as Prepared
from tiny import executed_copy as executed


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


def test_check_disjoint_refuses_an_item_on_two_pages():
    page = lambda targets: {"profile": "cpu", "parameters": {"targets": targets}}
    results.check_disjoint({"a": page(["x", "y"]), "b": page(["z"])}, "targets")
    with pytest.raises(checks.BadInput, match="'y' is in the 'targets' of both a and b"):
        results.check_disjoint({"a": page(["x", "y"]), "b": page(["y"])}, "targets")


@dataclasses.dataclass
class Recipe:  # a training recipe's shape: what decides the model, and what does not (NOT_RECIPE)
    epochs: int = 2
    lr: float = 1e-4
    betas: tuple = (0.9, 0.999)
    device: str = "cpu"
    seed: int = 0


PARAMS = {"model": "offline", "max_length": 128}
DATA = {"a": Prepared(10), "b": Prepared(20)}


def test_the_recipe_holds_the_model_the_tasks_their_sizes_and_the_training_fields():
    frame = results.recipe_frame(PARAMS, DATA, Recipe()).set_index("setting").value
    assert list(frame.index) == ["model", "max_length", "tasks", "a train", "a validation", "a test", "b train", "b validation",
                                 "b test", "epochs", "lr", "betas"]  # no device, no seed
    assert frame["tasks"] == '["a", "b"]' and frame["b train"] == "20" and frame["betas"] == "[0.9, 0.999]"
    assert results.recipe_frame(PARAMS, DATA, Recipe(device="cuda", seed=3)).equals(results.recipe_frame(PARAMS, DATA, Recipe()))


def test_a_table_is_read_only_from_a_copy_trained_on_the_same_recipe(tmp_path):
    record = {"profile": "cpu", "commit": "abc1234", "parameters": {}}
    executed(tmp_path, "07c", {"scores": SCORES, "recipe": results.recipe_frame(PARAMS, DATA, Recipe())}, record)
    table, got = results.read_same_recipe("07c", results.recipe_frame(PARAMS, DATA, Recipe(device="cuda")), "scores", tmp_path / "book")
    pd.testing.assert_frame_equal(table, SCORES)
    assert got == record
    other = results.recipe_frame(PARAMS, {"a": Prepared(10), "b": Prepared(21)}, Recipe(lr=3e-4))
    with pytest.raises(checks.BadInput, match=r"07c's models were trained on another recipe \(b train: 20 there, 21 here; lr: 0.0001 there, 0.0003 here\)"):
        results.read_same_recipe("07c", other, "scores", tmp_path / "book")
    fewer = results.recipe_frame(PARAMS, {"a": Prepared(10)}, Recipe())
    with pytest.raises(checks.BadInput, match="b train: 20 there, absent here"):
        results.read_same_recipe("07c", fewer, "scores", tmp_path / "book")
    executed(tmp_path, "old", {"scores": SCORES}, record)  # a copy from before the recipe was glued
    with pytest.raises(checks.BadInput, match="no table glued as 'recipe'"):
        results.read_same_recipe("old", fewer, "scores", tmp_path / "book")
