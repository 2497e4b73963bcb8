import os
import sys
import tempfile
from pathlib import Path

# Tests never touch the network: make the hub libraries fail fast instead of retrying.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Tests never read a cache a previous run left behind (tokenised features, trained models): each session starts
# with an empty one, which notebook kernels started by the tests inherit too.
os.environ["MTLLIB_CACHE"] = tempfile.mkdtemp(prefix="mtllib-test-cache-")

# tests/ mirrors mtllib/ in sub-folders; their shared helpers (tiny.py) live here
sys.path.insert(0, str(Path(__file__).resolve().parent))
