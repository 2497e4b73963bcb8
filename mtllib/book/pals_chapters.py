"""The chapters of "BERT and PALs": 06 (Table 1's accounting and Table 2, Sec. 4-5), 06b (where to add PALs,
Sec. 5.2), 06c (the small budget, Sec. 5.1), 06d (sampling schedules, Sec. 4.1 and 6), 06e (training curves,
Appendix A), 06f (a span-QA and a multiple-choice task, Appendix B) and 06g (Table 2 on the GLUE-like suite).
Each function here is a step those notebooks share: the opening (parameters checked, the encoder's
configuration and the paper's budget on it, then the data and the training recipe), the parameter tables as a
page shows them, the per-seed differences the claims are judged on, how far each variant moved from the fully
shared model, the figure of the averages, the set-up beside the paper's, and the fully shared models read from
another chapter that trained them on the same recipe. What the chapters train stays in
:mod:`mtllib.experiments.adapters`; reading the trained variants, in :mod:`mtllib.book.variants`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pandas as pd

from mtllib.analysis.stats import DASH
from mtllib.book.training_run import TrainingRun
from mtllib.papers import bert_and_pals as paper


@dataclass
class Start(TrainingRun):
    """What :func:`start` set up for a PALs chapter, with the clock its run time is read from (``minutes()``).
    ``data`` and ``config`` are ``None`` until :meth:`prepare`."""

    #: the encoder's configuration (:class:`transformers.PretrainedConfig`, no weights loaded)
    encoder_config: object
    #: Table 1's budget: the multiplier of PALs (d_s 204) on BERT-base with 8 tasks
    budget: float
    #: every method with a size and its largest d_s within that budget on this encoder, ``{method: {"size": d_s}}``
    matched: dict

    def prepare(self) -> dict:
        """The chapter's ``tasks`` prepared (:meth:`TrainingRun.prepare`) and its training recipe
        (:meth:`TrainingRun.recipe`: ``epochs``, ``batch_size``, ``lr``, ``device`` and, when the chapter has one,
        ``sampler``) as ``self.config``; returns the data. Call it after the chapter's own checks: this is the
        first step that works."""
        super().prepare()
        self.config = self.recipe()
        return self.data

    def encoder_text(self) -> str:
        """``"offline (6 layers x 12 heads, hidden 384)"``: the encoder as the set-up tables name it."""
        c = self.encoder_config
        return f"{self.params['model']} ({c.num_hidden_layers} layers x {c.num_attention_heads} heads, hidden {c.hidden_size})"

    def tasks_text(self) -> str:
        """``"2 offline tasks: bbc-topic (320), tweet-sentiment (1,000)"``, the training examples in brackets once
        the data is prepared."""
        tasks = self.params["tasks"]
        sizes = {t: f" ({len(self.data[t].features['train']):,})" for t in tasks} if self.data else {}
        return f"{len(tasks)} offline tasks: " + ", ".join(t + sizes.get(t, "") for t in tasks)

    def setup_table(self, paper_rows: dict, our_rows: dict) -> pd.DataFrame:
        """What the chapter does differently from the paper, one row per setting: the encoder, the tasks, the
        training and the sampling (the paper's from :mod:`mtllib.papers.bert_and_pals`, ours from the parameters),
        then the chapter's own rows (``paper_rows`` and ``our_rows``, the same keys; a key named above replaces
        that row), the seeds last (the paper's "not stated" unless ``paper_rows`` says more)."""
        p = self.params
        training = f"{p['epochs']} epoch(s), batch {p['batch_size']}, lr {p['lr']:g}, the epoch with the best average dev score"
        theirs = {"model": paper.MODEL, "tasks": paper.TASKS, "training": paper.TRAINING, "sampling": paper.SAMPLING}
        ours = {"model": self.encoder_text(), "tasks": self.tasks_text(), "training": training, "sampling": p.get("sampler", DASH)}
        if set(paper_rows) != set(our_rows):
            raise ValueError(f"paper_rows and our_rows must name the same settings: {sorted(set(paper_rows) ^ set(our_rows))}")
        theirs, ours = {**theirs, **paper_rows}, {**ours, **our_rows}
        theirs["seeds"], ours["seeds"] = theirs.pop("seeds", "not stated"), ours.pop("seeds", len(p["seeds"]))
        return pd.DataFrame({"paper": theirs, "ours": ours}).rename_axis("setting")


def start(params: dict, notebook: str) -> Start:
    """The opening of a PALs chapter, from its parameters (the notebook's ``globals()``): progress bars and
    library warnings silenced (:func:`mtllib.runtime.quiet_notebook`: the page keeps no stderr), every parameter
    checked (:func:`mtllib.book.params.check_parameters`), the device picked, the encoder's configuration read
    (no weights) and Table 1's budget carried over to it (:func:`mtllib.experiments.adapters.budget_sizes`).
    Nothing is trained or tokenized yet: the chapter checks its methods or variants against
    ``encoder_config``, then calls :meth:`Start.prepare`. Prints a one-line summary."""
    from transformers import AutoConfig

    from mtllib.book.params import check_parameters
    from mtllib.data.assets import resolve_model
    from mtllib.experiments.adapters import budget_sizes
    from mtllib.runtime import pick_device, quiet_notebook

    started = time.perf_counter()
    quiet_notebook()
    p = check_parameters(params, notebook)
    device = pick_device(p["device"])
    encoder_config = AutoConfig.from_pretrained(resolve_model(p["model"]))
    budget, matched = budget_sizes(encoder_config)
    print("device:", device, "| tasks:", ", ".join(p["tasks"]), "| seeds:", p["seeds"])
    return Start(params=p, encoder_config=encoder_config, budget=budget, matched=matched, device=device, started=started)


def counts_shown(table: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """A parameter table as a page shows it: counts (``added ...`` columns) with thousands separators, every
    ``multiplier`` column as ``1.130x`` (``digits`` decimals); other columns unchanged."""
    shown = {c: table[c].map("{:,}".format) for c in table if str(c).startswith("added")}
    shown.update({c: table[c].map(f"{{:.{digits}f}}x".format) for c in table if str(c).startswith("multiplier")})
    return table.assign(**shown)


def multipliers(encoder_config, methods: list[str], num_tasks: int, sizes: dict | None = None) -> pd.Series:
    """Each method's multiplier with ``num_tasks`` tasks on the encoder (:func:`mtllib.experiments.adapters.parameter_table`),
    as the score tables' ``parameters`` column shows it (``"1.130x"``)."""
    from mtllib.experiments.adapters import parameter_table

    table = parameter_table(encoder_config, list(methods), num_tasks, sizes)
    return table.multiplier.map("{:.3f}x".format).rename("parameters")


class Differences(dict):
    """The per-seed differences between two variants' averages over the learned tasks, the form the claims are
    judged on: ``differences(a, b)`` returns ``per_seed[a] - per_seed[b]`` (seeds missing from either
    dropped) and keeps it under ``"a\\nminus b"`` for the figure (:func:`mtllib.book.variants.variants_figure`)."""

    def __init__(self, per_seed: pd.DataFrame):
        super().__init__()
        self.per_seed = per_seed

    def __call__(self, a: str, b: str) -> pd.Series:
        d = (self.per_seed[a] - self.per_seed[b]).dropna()
        self[f"{a}\nminus {b}"] = d
        return d


def moved(per_seed: pd.DataFrame, reference: str = "shared") -> pd.DataFrame:
    """How far each variant moved the average over the learned tasks from ``reference`` (the fully shared model)
    of the same seed, in points: one row per seed, one column per other variant; empty when ``reference`` was
    not run or no task was learned."""
    if reference not in per_seed or per_seed.empty:
        return pd.DataFrame(index=per_seed.index)
    return per_seed.drop(columns=reference).sub(per_seed[reference], axis=0)


def average_figure(per_seed: pd.DataFrame, learned: list[str], order: list[str] | None = None, title: str | None = None):
    """One panel: the average over the learned tasks per variant (dots: seeds; bar: the mean with its 95%
    t-interval), in ``order``; a panel saying so when no task was learned by every model."""
    import matplotlib.pyplot as plt

    from mtllib.book import plots

    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    columns = [v for v in (order or per_seed.columns) if v in per_seed]
    if learned and columns:
        plots.seeds_with_ci(ax, per_seed[columns], ylabel="average test score (%)", zero_line=False)
        ax.set_title(title or f"average over the learned tasks ({', '.join(learned)})")
    else:
        plots.nothing_to_show(ax, "no task was learned by every model")
    fig.tight_layout()
    return fig


def borrowed_shared(source: str, recipe: pd.DataFrame, seeds: list[int], book_dir=None, variant: str | None = None) -> tuple[pd.DataFrame, str]:
    """The fully shared models' rows for ``seeds`` (the columns of :func:`mtllib.experiments.adapters.run_variants`,
    ``method`` ``"shared"``) read from chapter ``source``'s executed copy, where they were trained as its
    multi-task baseline (``variant``; default :data:`mtllib.experiments.iat.BASELINE`), and a line naming that
    copy (profile, commit, date) for the page. A plain multi-task model is a fully shared one, and the two
    chapters' models are the same only on the same recipe: :func:`mtllib.book.results.read_same_recipe` refuses a
    copy trained otherwise, and a seed the copy lacks is refused here. Nothing is trained."""
    from mtllib import checks
    from mtllib.book import results
    from mtllib.experiments.adapters import RUN_COLUMNS
    from mtllib.experiments.iat import BASELINE

    scores, record = results.read_same_recipe(source, recipe, "scores", book_dir)
    base = scores[scores.variant == (variant or BASELINE)]
    missing = sorted(set(seeds) - set(base.seed))
    if missing:
        raise checks.BadInput(f"{source} has no {variant or BASELINE} model for seed(s) {missing} (it has {sorted(set(base.seed))}): "
                              f"execute it with these seeds, or train the fully shared models here (shared_from = None)")
    rows = base[base.seed.isin(seeds)].assign(variant="shared")[RUN_COLUMNS].rename(columns={"variant": "method"})
    return rows.reset_index(drop=True), f"{source} ({record['profile']} profile, commit {record['commit']}, executed {record['executed_at']})"
