"""What a stored result records about the run that made it: commit, machine, thread count and versions."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from pathlib import Path

#: folders whose changes are outputs, not code: they do not make a commit "dirty"
OUTPUTS = ("book", "results")


def commit(root: Path) -> str:
    """``root``'s short commit, ``-dirty`` when tracked files outside :data:`OUTPUTS` changed; ``"unknown"``
    outside git."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()

    try:
        sha = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", *(f":(exclude){o}" for o in OUTPUTS))
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{sha}-dirty" if changed else sha


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo``, else :func:`platform.processor`."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(device: str) -> dict:
    """The machine a job ran on: CPU, cores, the torch thread count, and the GPU where ``device`` is one."""
    import torch

    info = {"cpu": cpu_model(), "cores": os.cpu_count(), "threads": torch.get_num_threads(), "device": str(device),
            "python": platform.python_version(), "torch": torch.__version__}
    if str(device).startswith("cuda") and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return info


def now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
