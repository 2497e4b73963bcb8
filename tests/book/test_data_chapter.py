"""The steps of the data chapter (01): the encoder table, label shares, the learning-curve rows and figures."""

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from mtllib.analysis.stats import DASH
from mtllib.book import data_chapter as chapter


def test_the_encoder_table_sets_a_tiny_bert_beside_the_papers_encoders():
    from transformers import BertConfig, BertModel

    encoder = BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=32,
                                   max_position_embeddings=24))
    ours = chapter.encoder_facts(encoder)
    assert (ours["architecture"], ours["layers"], ours["heads per layer"], ours["heads in all"]) == ("BertModel", 2, 4, 8)
    assert (ours["hidden size"], ours["feed-forward size"], ours["vocabulary"], ours["max positions"]) == (16, 32, 50, 24)
    table = chapter.encoder_table(ours, "tiny (ours)")
    assert list(table.columns) == ["tiny (ours)", "BERT-base (paper)", "TinyBERT (paper)"]
    assert table.loc["heads in all", "BERT-base (paper)"] == 144 and table.loc["layers", "TinyBERT (paper)"] == 6
    assert table.loc["hidden size", "BERT-base (paper)"] == DASH  # the paper does not list it
    assert isinstance(table.loc["layers", "BERT-base (paper)"], int)  # not 12.0


def test_share_table_counts_labels_in_the_given_order():
    table = chapter.share_table(pd.Series(["b", "a", "b", "b"]), ["a", "b", "c"], "items")
    assert table["items"].tolist()[:2] == [1, 3] and pd.isna(table.loc["c", "items"])
    assert table["share (%)"].tolist()[:2] == [25.0, 75.0]


def _rows(task, sizes_learned, chapter_name="curve"):
    return [{"task": task, "train_size": n, "learned": ok, "chapter": chapter_name, "validation": 50.0 + n / 100, "threshold": 55.0,
             "epochs": 2, "score": 60.0, "majority": 40.0, "seconds": 1.0} for n, ok in sizes_learned]


def test_learning_curves_read_every_benchmark_file_and_find_the_first_size_that_passed(tmp_path):
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "learnability_a.json").write_text(json.dumps({"tasks": _rows("t1", [(1000, True), (250, False), (500, True)])}))
    (results / "learnability_b.json").write_text(json.dumps({"tasks": _rows("t2", [(250, False), (500, False)]) + _rows("t1", [(300, False)], "02")}))
    (results / "other.json").write_text(json.dumps({"tasks": _rows("t3", [(10, True)])}))  # not a learnability file
    nested = tmp_path / "notebooks" / "deeper"
    nested.mkdir(parents=True)
    assert chapter.results_dir(nested) == results
    curves = chapter.learning_curves(chapter.results_dir(nested))
    assert list(curves.index) == [("t1", 250), ("t1", 300), ("t1", 500), ("t1", 1000), ("t2", 250), ("t2", 500)]
    assert chapter.first_learned(curves) == {"t1": 500}  # t2 never passed
    fig = chapter.curves_figure(curves)
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines["t1"].get_xdata()) == [250, 500, 1000]  # the chapter's own row (300) is not on the curve
    assert list(lines["t1"].get_ydata()) == pytest.approx([-2.5, 0.0, 5.0])  # validation minus gate
    assert [t.get_text() for t in ax.get_xticklabels()] == ["250", "500", "1,000"]
    plt.close(fig)
    assert list(chapter.curves_table(curves).columns) == ["epochs", "validation (%)", "gate (%)", "learned", "test (%)",
                                                          "majority, test (%)", "training + evaluation (s)"]


def test_results_dir_says_where_it_looked(tmp_path):
    with pytest.raises(FileNotFoundError, match="no benchmarks/results folder"):
        chapter.results_dir(tmp_path)


def test_the_length_figures_mark_the_models_maximum_and_count_the_tweets():
    sample = pd.DataFrame({"topic": ["sport", "tech", "sport"], "article_tokens": [300, 2000, 700], "headline_tokens": [8, 9, 10]})
    fig = chapter.bbc_lengths_figure(sample, 512)
    marks = [line for line in fig.axes[0].get_lines() if line.get_label() == "model max length"]
    assert len(marks) == 1 and list(marks[0].get_xdata()) == [512, 512]
    plt.close(fig)
    fig = chapter.tweet_lengths_figure(pd.DataFrame({"sentiment": ["positive", "negative"], "tokens": [12, 30]}))
    assert fig.axes[0].get_title() == "Tweet length (2 tweets)"
    plt.close(fig)
    fig = chapter.task_sizes_figure(pd.DataFrame({"train": [70, 7], "validation": [15, 2], "test": [15, 2]}, index=["x", "y"]))
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["x", "y"]
    plt.close(fig)


class Glue(dict):
    def __call__(self, key, value):
        self[key] = value


def test_cap_draws_at_most_n_rows_with_the_seed_and_keeps_their_order():
    frame = pd.DataFrame({"x": range(10)})
    assert chapter.cap(frame, None, 0) is frame and chapter.cap(frame, 10, 0) is frame
    drawn = chapter.cap(frame, 4, seed=3)
    assert len(drawn) == 4 and drawn.index.is_monotonic_increasing
    assert drawn.equals(chapter.cap(frame, 4, seed=3)) and not drawn.equals(chapter.cap(frame, 4, seed=4))


def test_the_needs_are_the_smallest_size_that_passed_or_say_none_did():
    rows = [("bbc-next", 1000, False), ("bbc-next", 2000, True), ("bbc-paraphrase", 500, False), ("bbc-paraphrase", 1000, True),
            ("tweet-pair", 500, False), ("tweet-pair", 2000, False)]
    curves = pd.DataFrame([{"task": t, "train_size": n, "learned": ok} for t, n, ok in rows]).set_index(["task", "train_size"])
    glue = Glue()
    chapter.glue_needs(curves, glue=glue)
    assert (glue["next_needs"], glue["mrpc_needs"], glue["tweet_pair_needs"]) == ("2,000", "1,000", "none of the sizes up to 2,000")
    assert glue["headline_needs"] == "0"  # quoted as a number: no row
    assert glue["cola_needs"] == "none of the sizes up to 0"
    assert set(glue) == {f"{stem}_needs" for stem in chapter.NEEDS}


def test_the_silver_table_without_a_summary_lists_the_tasks_and_says_why(capsys):
    from mtllib.data.tasks import SILVER_TASKS

    table = chapter.silver_table(False, seed=0)
    assert list(table.index) == list(SILVER_TASKS) and "main metric" in table.columns
    assert "silver_summary=False" in capsys.readouterr().out


def test_the_silver_probes_give_the_smallest_learned_pos_size_and_the_best_ner_probe(tmp_path):
    rows = [{"task": "tweet-pos", "train_size": 250, "learned": True, "score": 60.0}, {"task": "tweet-pos", "train_size": 100, "learned": False, "score": 40.0},
            {"task": "bbc-ner", "train_size": 200, "learned": False, "score": 37.2}, {"task": "bbc-ner", "train_size": 250, "learned": False, "score": 0.0}]
    (tmp_path / "silver_probes_cpu.json").write_text(json.dumps({"tasks": rows}))
    glue = Glue()
    chapter.glue_silver_probes(tmp_path, glue=glue)
    assert glue == {"probe_pos_n": "250", "probe_ner_n": "200", "probe_ner_f1": "37.2"}


def test_the_exercise_numbers_count_pruned_heads_and_the_largest_topics_gate():
    glue = Glue()
    counts = pd.DataFrame({"share (%)": [23.0, 17.3]}, index=["sport", "tech"])
    chapter.glue_exercise_numbers(72, counts, glue=glue)
    assert (glue["ex_pruned_ours"], glue["ex_pruned_base"]) == ("22", "43")  # 30% of 72 and of 144 heads, rounded
    assert (glue["ex_largest_topic"], glue["ex_largest_share"], glue["ex_topic_gate"], glue["ex_margin"]) == ("sport", "23.0", "38.0", "15")
