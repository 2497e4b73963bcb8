"""Diagrams drawn from the experiment's own settings, so they show what was run: the task groups (the
transferability paper's Figure 1) and the pre-finetuning workflow (its Figure 2)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

#: one colour per task group (colour-blind safe, matplotlib's tab10)
GROUP_COLOURS = {"SL": "tab:blue", "QA": "tab:orange", "C": "tab:green"}
GROUP_NAMES = {"SL": "sequence labelling", "QA": "extractive QA", "C": "classification"}


def _colour(group: str, i: int) -> str:
    return GROUP_COLOURS.get(group, f"C{i + 3}")


def task_groups(groups: dict[str, list[str]], targets: dict[str, list[str]], describe=None):
    """Figure 1: one column per group, its pre-finetuning tasks above (filled) and its unseen targets below (dashed).
    ``describe(task)`` may add a short note under each name (e.g. the paper task it stands in for)."""
    rows = max(len(groups[g]) + len(targets.get(g, [])) for g in groups) + 2
    fig, ax = plt.subplots(figsize=(7.2, 0.42 * rows + 0.6))
    ax.set(xlim=(0, len(groups)), ylim=(rows, 0))
    ax.axis("off")
    for i, (group, tasks) in enumerate(groups.items()):
        colour = _colour(group, i)
        ax.text(i + 0.5, 0.5, f"{group}: {GROUP_NAMES.get(group, group)}", ha="center", va="center", weight="bold", color=colour, fontsize=9)
        entries = [(t, False) for t in tasks] + [(None, None)] + [(t, True) for t in targets.get(group, [])]
        for j, (task, is_target) in enumerate(entries, start=1):
            if task is None:
                ax.text(i + 0.5, j + 0.5, "unseen targets", ha="center", va="center", fontsize=8, style="italic", color="0.35")
                continue
            box = FancyBboxPatch((i + 0.06, j + 0.1), 0.88, 0.8, boxstyle="round,pad=0.0,rounding_size=0.12",
                                 facecolor=colour if not is_target else "white", alpha=0.25 if not is_target else 1.0,
                                 edgecolor=colour, linestyle="--" if is_target else "-", lw=1.4)
            ax.add_patch(box)
            label = task + (f"\n{describe(task)}" if describe else "")
            ax.text(i + 0.5, j + 0.5, label, ha="center", va="center", fontsize=8 if not describe else 7)
    return fig


def workflow(schemes: list[str], groups: dict[str, list[str]], targets: dict[str, list[str]]):
    """Figure 2: the pretrained encoder, pre-finetuned on each scheme's groups with one head per task, then
    fine-tuned with a fresh head on every target (``"Baseline"`` skips pre-finetuning)."""
    from mtllib.papers.task_transferability import scheme_groups

    n = len(schemes)
    fig, ax = plt.subplots(figsize=(7.2, 0.36 * n + 1.2))
    ax.set(xlim=(0, 10), ylim=(n + 0.6, -0.9))
    ax.axis("off")
    kw = dict(ha="center", va="center", fontsize=8)
    ax.add_patch(FancyBboxPatch((0.1, n / 2 - 0.9), 1.8, 1.8, boxstyle="round,pad=0.05", facecolor="0.9", edgecolor="0.4"))
    ax.text(1.0, n / 2, "pretrained\nencoder", **kw)
    ax.text(4.3, -0.6, "pre-finetuning (heterogeneous batches,\none head per task)", weight="bold", **kw)
    ax.text(8.3, -0.6, f"fine-tuning ({sum(map(len, targets.values()))} targets,\nfresh head, each seed)", weight="bold", **kw)
    for i, scheme in enumerate(schemes):
        y = i + 0.5
        ax.annotate("", xy=(2.7, y), xytext=(1.9, n / 2), arrowprops=dict(arrowstyle="->", color="0.5", lw=0.8))
        used = [] if scheme == "Baseline" else scheme_groups(scheme)
        tasks = sum(len(groups[g]) for g in used)
        x = 2.8
        if not used:
            ax.text(4.3, y, "none (Baseline)", color="0.35", style="italic", **kw)
        for j, g in enumerate(used):
            ax.add_patch(FancyBboxPatch((x + j * 0.88, y - 0.36), 0.8, 0.72, boxstyle="round,pad=0.0,rounding_size=0.1",
                                        facecolor=_colour(g, list(groups).index(g)), alpha=0.35, edgecolor="none"))
            ax.text(x + j * 0.88 + 0.4, y, g, **kw)
        if used:
            ax.text(5.6, y, f"{tasks} tasks", fontsize=7, color="0.35", ha="left", va="center")
        ax.annotate("", xy=(7.2, y), xytext=(6.7, y), arrowprops=dict(arrowstyle="->", color="0.5", lw=0.8))
        ax.text(8.3, y, scheme, **kw)
    return fig
