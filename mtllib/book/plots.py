"""The book's figures: an annotated heat map whose labels contrast with their cells, and a plot of per-seed
values with their mean, 95% CI and the paper's value; :func:`glue_figure` hands a figure to its caption. Sized to stay legible at the book's column width
(labels >= 9 pt at 100% width)."""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mtllib.analysis.stats import t_interval

FONT = 10  #: points; a figure 7 inches wide shown at the ~700 px text column keeps 10 pt at about 10 px

mpl.rcParams.update({"font.size": FONT, "axes.titlesize": FONT + 1, "axes.labelsize": FONT, "xtick.labelsize": FONT - 1,
                     "ytick.labelsize": FONT - 1, "legend.fontsize": FONT - 1, "figure.dpi": 110, "savefig.dpi": 150})


def glue_figure(key: str, fig, glue=None) -> None:
    """Store ``fig`` under ``key`` for the page's captioned ``{glue:figure}`` and close it, so that the figure
    appears once, numbered and captioned, and not also as the cell's output."""
    from mtllib.book.tables import glue_function

    glue_function(glue)(key, fig)
    plt.close(fig)


def nothing_to_show(axes, message: str) -> None:
    """Say ``message`` in the middle of each of ``axes`` (one Axes or several) and hide their frames: a panel
    whose data this run did not produce (no task learned, no sweep in the profile) says why instead."""
    for ax in np.atleast_1d(axes).ravel():
        ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes)
        ax.axis("off")


def heatmap(ax, table: pd.DataFrame, vmin: float | None = None, vmax: float | None = None, cmap: str = "RdBu_r",
            fmt: str = "{:.1f}", colorbar_label: str | None = None, fontsize: int = FONT - 1):
    """Draw ``table`` as an annotated heat map on ``ax``; each label is black or white, whichever contrasts
    with its cell; NaN cells stay empty. Returns the image."""
    values = table.to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    vmin = float(finite.min()) if vmin is None and finite.size else vmin
    vmax = float(finite.max()) if vmax is None and finite.size else vmax
    im = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=30, ha="right")
    ax.set_yticks(range(table.shape[0]), [str(i) for i in table.index])
    colormap = plt.get_cmap(cmap)
    norm = mpl.colors.Normalize(vmin=vmin, vmax=vmax)
    for (i, j), v in np.ndenumerate(values):
        if np.isfinite(v):
            r, g, b, _ = colormap(norm(v))
            light = 0.299 * r + 0.587 * g + 0.114 * b > 0.5
            ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=fontsize, color="black" if light else "white")
    if colorbar_label is not None:
        ax.figure.colorbar(im, ax=ax, label=colorbar_label, shrink=0.85)
    return im


def seeds_with_ci(ax, per_seed: pd.DataFrame, paper: pd.Series | None = None, ylabel: str = "", zero_line: bool = True):
    """One column per item (``per_seed``: rows = seeds, columns = items): every seed's value as a dot, the
    mean with its 95% t-interval as a bar, and the paper's value as a red diamond."""
    paper_labelled = False
    for k, item in enumerate(per_seed.columns):
        values = per_seed[item].dropna().to_numpy(dtype=float)
        jitter = np.linspace(-0.12, 0.12, len(values)) if len(values) > 1 else np.zeros(len(values))
        ax.scatter(k + jitter, values, color="0.45", s=18, zorder=3, label="one seed" if k == 0 else None)
        if len(values):
            ci = t_interval(values)
            err = None if not np.isfinite(ci.half_width) else [[ci.mean - ci.low], [ci.high - ci.mean]]
            ax.errorbar(k + 0.28, ci.mean, yerr=err, fmt="o", color="C0", capsize=4, zorder=4, label="mean, 95% CI" if k == 0 else None)
        if paper is not None and item in paper.index and np.isfinite(paper[item]):
            ax.scatter(k + 0.28, paper[item], marker="D", color="C3", s=30, zorder=5, label=None if paper_labelled else "paper")
            paper_labelled = True
    if zero_line:
        ax.axhline(0, color="0.6", lw=0.8)
    ax.set_xticks(range(per_seed.shape[1]), [str(c) for c in per_seed.columns], rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.legend(loc="best", frameon=False)
