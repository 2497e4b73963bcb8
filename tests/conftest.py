import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

# Tests never touch the network, whatever the environment exports (HF_HUB_OFFLINE=0 included): the hub
# libraries fail fast instead of connecting.
for _name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ[_name] = "1"

# ... and never find a dataset the machine happens to have cached: an empty hub home for every session.
os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="mtllib-test-hf-")
os.environ["HF_DATASETS_CACHE"] = os.path.join(os.environ["HF_HOME"], "datasets")

# Tests never read a cache a previous run left behind (tokenised features, trained models): each session starts
# with an empty one, which notebook kernels started by the tests inherit too.
os.environ["MTLLIB_CACHE"] = tempfile.mkdtemp(prefix="mtllib-test-cache-")

# ... and never write into the repository's results store: a copy of the committed results, so pages read what
# is committed and store what they compute in the copy.
os.environ["MTLLIB_RESULTS"] = tempfile.mkdtemp(prefix="mtllib-test-results-")
_COMMITTED = Path(__file__).resolve().parents[1] / "results"
if _COMMITTED.is_dir():
    shutil.copytree(_COMMITTED, os.environ["MTLLIB_RESULTS"], dirs_exist_ok=True, ignore=shutil.ignore_patterns(".locks"))

# All three are removed when the session ends: the smoke notebooks alone leave several GB of trained models there, and
# sessions that kept them filled this machine's disk (2026-12-04: 56 GB in /tmp, a full disk failed torch.save).
# Only the process that made them removes them: a forked worker (mutmut's) exits while the session goes on.
_SESSION_DIRS, _OWNER = (os.environ["HF_HOME"], os.environ["MTLLIB_CACHE"], os.environ["MTLLIB_RESULTS"]), os.getpid()


def _remove_session_dirs():
    if os.getpid() == _OWNER:
        for path in _SESSION_DIRS:
            shutil.rmtree(path, ignore_errors=True)


atexit.register(_remove_session_dirs)

# tests/ mirrors mtllib/ in sub-folders; their shared helpers (tiny.py) live here
sys.path.insert(0, str(Path(__file__).resolve().parent))

# tqdm in tests: no monitor thread and a plain thread lock. tqdm's default lock is a multiprocessing RLock
# created on first use, and a monitor thread may hold it; in a test process that forks (as mutmut's workers
# do) either leaves the child unable to draw a progress bar. Bars themselves work as always.
import threading  # noqa: E402

import tqdm  # noqa: E402

tqdm.tqdm.monitor_interval = 0
tqdm.tqdm.set_lock(threading.RLock())
