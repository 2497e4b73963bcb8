"""Seeds, device selection, mixed precision and the cache folder: the few lines every experiment needs.

CPU is the default everywhere (it is what CI and the committed book use). On a CUDA machine,
``pick_device("auto")`` selects the GPU and :func:`autocast` runs the forward pass in bfloat16. On a CPU,
bf16 is an explicit opt-in (``cpu_bf16``) that applies only where the CPU has native bf16.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
from pathlib import Path

import numpy as np
import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")


def cache_root() -> Path:
    """The folder of every local cache (features, silver labels, assets, trained models): ``$MTLLIB_CACHE``
    (``~`` expanded), default ``~/.cache/mtllib``. A cache is a convenience a new machine lacks: no result
    depends on it."""
    return Path(os.environ.get("MTLLIB_CACHE", "~/.cache/mtllib")).expanduser()


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


#: CPU flags (as /proc/cpuinfo names them) of native bf16 arithmetic
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (empty where that file does not exist)."""
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return frozenset()
    line = next((l for l in text.splitlines() if l.startswith(("flags", "Features"))), "")
    return frozenset(line.split(":", 1)[-1].split())


def native_cpu_bf16() -> bool:
    """True when this CPU computes bf16 natively (avx512_bf16 or AMX): there bf16 autocast is faster than
    fp32; elsewhere torch emulates it, slower than fp32."""
    return bool(cpu_flags() & set(NATIVE_BF16_FLAGS))


_notified = False


def autocast(device: torch.device, enabled: bool = True, cpu_bf16: bool = False):
    """bf16 autocast on CUDA (``enabled``, when the GPU supports it), and on a CPU only when asked for
    (``cpu_bf16``, an explicit opt-in) *and* the CPU has native bf16; an opt-in on a CPU without it runs in
    fp32 and says so once. Otherwise a no-op context: fp32, exact and repeatable."""
    global _notified
    if enabled and device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    if cpu_bf16 and device.type == "cpu":
        if native_cpu_bf16():
            return torch.autocast(device_type="cpu", dtype=torch.bfloat16)
        if not _notified:
            print("note: cpu_bf16 was asked for, but this CPU has no native bf16 (avx512_bf16 / AMX): running in fp32", flush=True)
            _notified = True
    return contextlib.nullcontext()


def precision(device: torch.device, cuda_bf16: bool = True, cpu_bf16: bool = False) -> str:
    """``"bf16"`` or ``"fp32"``: what :func:`autocast` will compute in with these settings (for run records)."""
    if device.type == "cuda":
        return "bf16" if cuda_bf16 and torch.cuda.is_bf16_supported() else "fp32"
    return "bf16" if cpu_bf16 and device.type == "cpu" and native_cpu_bf16() else "fp32"


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
