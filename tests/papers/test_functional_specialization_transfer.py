"""Table 6 and Table 8 agree where they overlap (the 4-shot BERT-base rows), and the gains are the differences."""

import pytest

from mtllib.papers import functional_specialization_transfer as paper


def test_table_8_repeats_table_6_at_four_shots():
    for target in ("SciTail", "IMDB"):
        t6 = paper.TABLE6[(paper.TABLE6.target == target) & (paper.TABLE6.k == 4)].set_index("model")
        assert paper.TABLE8.loc["BERT-base", target] == pytest.approx(t6.loc["BERT-base", "mean"])
        assert paper.TABLE8.loc["train the most important 30% heads", target] == pytest.approx(t6.loc["BERT-base + IAT", "mean"])
        assert paper.TABLE8.loc["BERT-base", f"{target} sd"] == pytest.approx(t6.loc["BERT-base", "sd"], abs=0.05)


def test_gains():
    assert paper.table6_gain("SciTail", 4) == 6.22 and paper.table6_gain("IMDB", 4) == 8.29
    assert paper.table8_gain("SciTail", "train random 30% heads") == 3.05
    assert paper.table8_gain("IMDB", "random over BERT-base") == 5.6
    # IAT is the best of the four models at every k (the paper's bold)
    best = paper.TABLE6.loc[paper.TABLE6.groupby(["target", "k"])["mean"].idxmax()]
    assert set(best.model) == {"BERT-base + IAT"}
    with pytest.raises(KeyError, match="no target"):
        paper.table6_gain("SST-2", 4)
