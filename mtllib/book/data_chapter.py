"""The data chapter (01): the offline encoder beside the models of the papers, the two corpora, the task suites
and their learning curves. Each function here is one step of that notebook that is more than a call (a table
in the page's form, a figure, the learning-curve rows the benchmarks wrote). It reads data and benchmark
results only: the data chapter does not import the trainer, so a change to training code leaves it fresh.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from mtllib.analysis.stats import DASH
from mtllib.book.tables import glue_function

#: BERT-base and TinyBERT as the main paper's Table 2 lists them (layers, heads, parameters in millions)
PAPER_ENCODERS = {"BERT-base (paper)": {"layers": 12, "heads per layer": 12, "heads in all": 144, "parameters (M)": 110},
                  "TinyBERT (paper)": {"layers": 6, "heads per layer": 12, "heads in all": 72, "parameters (M)": 67}}


def cap(frame: pd.DataFrame, n: int | None, seed: int) -> pd.DataFrame:
    """At most ``n`` rows of ``frame`` (all with ``n`` None), drawn with ``seed`` and kept in their order."""
    return frame if n is None or n >= len(frame) else frame.sample(n=n, random_state=seed).sort_index()


def encoder_facts(encoder) -> dict:
    """The shape of a loaded encoder: architecture, layers, heads (per layer and in all), hidden and
    feed-forward sizes, vocabulary, maximum positions and parameters (millions, one decimal)."""
    cfg = encoder.config
    return {"architecture": type(encoder).__name__, "layers": cfg.num_hidden_layers, "heads per layer": cfg.num_attention_heads,
            "heads in all": cfg.num_hidden_layers * cfg.num_attention_heads, "hidden size": cfg.hidden_size,
            "feed-forward size": cfg.intermediate_size, "vocabulary": cfg.vocab_size, "max positions": cfg.max_position_embeddings,
            "parameters (M)": round(sum(p.numel() for p in encoder.parameters()) / 1e6, 1)}


def encoder_table(ours: dict, name: str) -> pd.DataFrame:
    """Our encoder's facts (column ``name``) beside the paper's encoders (:data:`PAPER_ENCODERS`): an em dash
    where the paper gives no value, counts as integers."""
    table = pd.concat([pd.Series(ours, name=name), pd.DataFrame(PAPER_ENCODERS)], axis=1).astype(object)
    return table.map(lambda v: DASH if pd.isna(v) else int(v) if isinstance(v, float) and v.is_integer() else v)


def share_table(labels: pd.Series, order: list[str], name: str) -> pd.DataFrame:
    """How many items carry each label (column ``name``, rows in ``order``) and their share in percent."""
    counts = labels.value_counts().reindex(order).rename(name).to_frame()
    counts["share (%)"] = (100 * counts[name] / counts[name].sum()).round(1)
    return counts


def bbc_lengths_figure(sample: pd.DataFrame, max_length: int):
    """Two panels for the BBC articles in ``sample`` (columns ``topic``, ``article_tokens``,
    ``headline_tokens``): article length per topic (clipped at 1,500 tokens, the model's maximum length
    marked) and headline length."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for topic, group in sample.groupby("topic"):
        axes[0].hist(group.article_tokens.clip(upper=1500), bins=30, histtype="step", linewidth=1.5, label=topic)
    axes[0].axvline(max_length, color="k", linestyle=":", label="model max length")
    axes[0].set(xlabel="tokens per article (headline + body, clipped at 1,500)", ylabel="articles", title="Article length")
    axes[0].legend(fontsize=8)
    axes[1].hist(sample.headline_tokens, bins=range(0, 25), color="tab:gray")
    axes[1].set(xlabel="tokens per headline", ylabel="articles", title="Headline length")
    fig.tight_layout()
    return fig


def tweet_lengths_figure(sample: pd.DataFrame):
    """Tweet length per sentiment for the tweets in ``sample`` (columns ``sentiment``, ``tokens``)."""
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for sentiment, group in sample.groupby("sentiment"):
        ax.hist(group.tokens, bins=range(0, 80, 2), histtype="step", linewidth=1.5, label=sentiment)
    ax.set(xlabel="tokens per tweet", ylabel="tweets", title=f"Tweet length ({len(sample):,} tweets)")
    ax.legend()
    fig.tight_layout()
    return fig


def task_sizes_figure(suite: pd.DataFrame):
    """Each task's examples per split (``suite``: one row per task with ``train``, ``validation``, ``test``)
    as stacked bars."""
    fig, ax = plt.subplots(figsize=(8, 3.6))
    suite[["train", "validation", "test"]].plot.barh(stacked=True, ax=ax, color=["tab:blue", "tab:orange", "tab:green"])
    ax.invert_yaxis()
    ax.set(xlabel="examples", ylabel="", title="Offline task sizes by split (before any profile's cap)")
    fig.tight_layout()
    return fig


def results_dir(start: Path | None = None) -> Path:
    """``benchmarks/results`` of the repository that holds ``start`` (default: the working directory; a
    notebook runs in ``notebooks/``)."""
    here = Path.cwd() if start is None else Path(start)
    for p in (here, *here.parents):
        if (p / "benchmarks" / "results").is_dir():
            return p / "benchmarks" / "results"
    raise FileNotFoundError(f"no benchmarks/results folder in {here} or above it")


def learning_curves(results: Path) -> pd.DataFrame:
    """Every row of the learnability benchmarks (``learnability_*.json``, written by
    ``benchmarks/bench_learnability.py``), indexed by (task, training size)."""
    rows = [row for f in sorted(Path(results).glob("learnability_*.json")) for row in json.loads(f.read_text())["tasks"]]
    return pd.DataFrame(rows).sort_values(["task", "train_size"]).set_index(["task", "train_size"])


def first_learned(curves: pd.DataFrame) -> dict[str, int]:
    """Per task: the smallest training size at which a single-task run passed the gate (tasks that never
    passed are absent)."""
    return {t: int(g.index.get_level_values("train_size")[g.learned.to_numpy(bool)].min())
            for t, g in curves.groupby(level="task") if g.learned.any()}


def curves_figure(curves: pd.DataFrame):
    """The learning-curve rows (``chapter == "curve"``): validation score minus the gate against the training
    size (log scale), one line per task; above zero, the task passed."""
    fig, ax = plt.subplots(figsize=(8, 4.2))
    rows = curves[curves.chapter == "curve"]
    for task, g in rows.groupby(level="task"):
        g = g.droplevel("task")
        ax.plot(g.index, g.validation - g.threshold, marker="o", label=task)
    ax.axhline(0, color="k", linestyle=":", label="the gate")
    ax.set(xscale="log", xlabel="training examples (task alone, 2 epochs)", ylabel="validation score minus gate (points)",
           title="Learning curves: how far above (or below) the learnability gate")
    sizes = sorted(rows.index.get_level_values("train_size").unique())
    ax.set_xticks(sizes, [f"{s:,}" for s in sizes])
    ax.minorticks_off()
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.tight_layout()
    return fig


def curves_table(curves: pd.DataFrame) -> pd.DataFrame:
    """The learning-curve rows as the page shows them: epochs, validation score and gate, learned, test score
    and the majority class's, seconds (one decimal)."""
    return curves[["epochs", "validation", "threshold", "learned", "score", "majority", "seconds"]].rename(columns={
        "validation": "validation (%)", "threshold": "gate (%)", "score": "test (%)", "majority": "majority, test (%)",
        "seconds": "training + evaluation (s)"}).round(1)


#: the tasks whose smallest learned size the chapter's text quotes, by the glue key's stem (``{stem}_needs``)
NEEDS = {"next": "bbc-next", "tweet": "tweet-sentiment", "headline": "bbc-headline", "mrpc": "bbc-paraphrase", "rte": "bbc-entailment",
         "stsb": "bbc-similarity", "cola": "bbc-acceptability", "qqp": "bbc-lede", "tweet_pair": "tweet-pair"}


def glue_needs(curves: pd.DataFrame, glue=None) -> None:
    """Glues ``{stem}_needs`` for each task of :data:`NEEDS`: the smallest training size at which it passed the
    gate alone (:func:`first_learned`), else "none of the sizes up to N" (0 for the first three, which the text
    quotes as numbers)."""
    glue = glue_function(glue)
    learned = first_learned(curves)
    measured = set(curves.index.get_level_values("task"))
    for stem, name in NEEDS.items():
        if name in learned or stem in ("next", "tweet", "headline"):
            glue(f"{stem}_needs", f"{learned.get(name, 0):,}")
        else:
            largest = int(curves.loc[name].index.max()) if name in measured else 0
            glue(f"{stem}_needs", f"none of the sizes up to {largest:,}")


def silver_table(summary: bool, seed: int) -> pd.DataFrame:
    """The silver tasks (:data:`mtllib.data.tasks.SILVER_TASKS`): with ``summary``, their sizes and label
    balance (:func:`mtllib.data.tasks.summary`; annotating every text with spaCy takes minutes on two cores from
    an empty cache); without, what each is, and a printed line that says the sizes are left out."""
    from mtllib.data import tasks

    if summary:
        return tasks.summary(tasks.SILVER_TASKS, seed=seed)
    print("silver_summary=False: the silver tasks are listed without their sizes and label balance (the cpu profile shows them)")
    return pd.DataFrame([{"task": n, "kind": t.kind, "input": t.paradigm, "stands in for": t.stands_in_for, "main metric": t.main_metric}
                         for n, t in ((n, tasks.get_task(n)) for n in tasks.SILVER_TASKS)]).set_index("task")


def glue_silver_probes(results: Path, glue=None) -> None:
    """Glues what the text quotes of the silver probes (``silver_probes_cpu.json``): ``probe_pos_n``, the smallest
    size at which tweet-pos passed the gate, and bbc-ner's best probe (``probe_ner_n``, ``probe_ner_f1``)."""
    glue = glue_function(glue)
    probes = pd.DataFrame(json.loads((Path(results) / "silver_probes_cpu.json").read_text())["tasks"])
    ner = probes[probes.task == "bbc-ner"].sort_values("score").iloc[-1]
    glue("probe_pos_n", f"{probes[(probes.task == 'tweet-pos') & probes.learned].train_size.min():,}")
    glue("probe_ner_n", f"{ner.train_size:,}")
    glue("probe_ner_f1", f"{ner.score:.1f}")


def glue_exercise_numbers(heads: int, counts: pd.DataFrame, glue=None) -> None:
    """The numbers of chapter 01's exercises: heads pruned at alpha 30% on our encoder (``heads`` in all) and on
    BERT-base (``ex_pruned_ours``, ``ex_pruned_base``), the largest BBC topic and its share (``counts``,
    :func:`share_table`), the gate a topic classifier must pass against it, and the gate's margin."""
    from mtllib.analysis import importance, learnability

    glue = glue_function(glue)
    largest = counts["share (%)"].idxmax()
    glue("ex_pruned_ours", str(importance.num_pruned(0.3, heads)))
    glue("ex_pruned_base", str(importance.num_pruned(0.3, 144)))
    glue("ex_largest_topic", largest)
    glue("ex_largest_share", f"{counts.loc[largest, 'share (%)']:.1f}")
    glue("ex_topic_gate", f"{learnability.threshold('accuracy', float(counts.loc[largest, 'share (%)'])):.1f}")
    glue("ex_margin", f"{learnability.MARGIN:.0f}")
