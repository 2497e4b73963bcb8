"""Started by ``tests/training/test_distributed.py`` under ``torchrun --nproc_per_node 2``: trains the tiny
model of ``tests/tiny.py`` with the unchanged trainer and saves what the main process saw.

``python -m torch.distributed.run --standalone --nproc_per_node 2 ddp_worker.py MODE OUT_DIR``, MODE one of
``train`` (homogeneous and heterogeneous batches), ``kill`` (checkpoints every 3 steps, every process stops at
step 7) and ``resume`` (the same run again: it resumes from the checkpoint).
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for tiny.py

from tiny import ddp_config, ddp_data, ddp_model  # noqa: E402

from mtllib.training import distributed  # noqa: E402
from mtllib.training.trainer import train  # noqa: E402


class Killed(Exception):
    pass


def kill_at_step_7(step):
    if step == 7:
        raise Killed


def main(mode: str, out: Path) -> None:
    tokenizer, data = ddp_data()
    world = distributed.launched_world_size()
    saved = {"world_size": world}
    runs = {"train": {"homogeneous": {}, "heterogeneous": {"batching": "heterogeneous"}},
            "kill": {"killed": {"checkpoint_dir": str(out / "run"), "checkpoint_every": 3}},
            "resume": {"resumed": {"checkpoint_dir": str(out / "run"), "checkpoint_every": 3}}}[mode]
    for name, changes in runs.items():
        model = ddp_model(tokenizer, data, seed=0 if mode != "resume" else 123)  # a resumed run's weights come from the checkpoint
        try:
            result = train(model, data, ddp_config(**changes), progress=False, on_step=kill_at_step_7 if mode == "kill" else None)
        except Killed:
            saved[name] = "killed at step 7"
            continue
        saved[name] = {"state": model.state_dict(), "log": result.log, "history": result.history, "best_epoch": result.best_epoch}
    saved["rank"] = int(torch.distributed.get_rank()) if torch.distributed.is_initialized() else 0
    if saved["rank"] == 0:
        torch.save(saved, out / f"{mode}.pt")
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
