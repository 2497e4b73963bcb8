"""Seeds, device selection and mixed precision: the few lines every experiment needs.

CPU is the default everywhere (it is what CI and the committed book use). On a CUDA machine,
``pick_device("auto")`` selects the GPU and :func:`autocast` runs the forward pass in bfloat16.
"""

from __future__ import annotations

import contextlib
import os
import random

import numpy as np
import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and all GPUs) so a run is repeatable on the same machine."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def pick_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"``: CUDA if available, else CPU (MPS is opt-in: its kernels are not deterministic).

    Asking for a device that is not there is an error rather than a silent fall-back.
    """
    if isinstance(device, torch.device):
        device = str(device)
    kind = device.split(":")[0]
    if kind not in DEVICE_CHOICES:
        raise ValueError(f"unknown device {device!r}; choose one of {', '.join(DEVICE_CHOICES)} (optionally cuda:N)")
    if kind == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if kind == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' was requested but torch sees no CUDA GPU (is a CUDA build of torch installed?)")
    if kind == "mps" and not torch.backends.mps.is_available():
        raise RuntimeError("device 'mps' was requested but it is not available on this machine")
    return torch.device(device)


def autocast(device: torch.device, enabled: bool = True):
    """bf16 autocast on CUDA (when the GPU supports it); a no-op context on CPU, where fp32 is faster and exact."""
    if enabled and device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def to_device(batch: dict, device) -> dict:
    """Move a batch's tensors to ``device`` (other values, such as a task name, stay as they are)."""
    return {k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}


def quiet_notebook() -> None:
    """Silence what would clutter an executed notebook page: the hub's weight-loading progress bars, the
    datasets library's map/save bars, and tqdm's "IProgress not found" warning (widgets would not survive
    into the book)."""
    import warnings

    from tqdm import TqdmWarning

    warnings.filterwarnings("ignore", category=TqdmWarning)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    import datasets

    datasets.disable_progress_bars()
