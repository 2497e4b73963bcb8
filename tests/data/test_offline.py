"""The offline task constructions: text utilities, AG-Pair pairing, article-level splits, determinism."""

import numpy as np
import pytest

from mtllib.data import offline as off
from mtllib.data.tasks import OFFLINE_TASKS, load_frames


def test_split_sentences_keeps_abbreviations_and_initials():
    text = 'Mr. Smith met J. Brown at 10 a.m. on Monday. "It went well," he said! Did it? Yes.'
    assert off.split_sentences(text) == ['Mr. Smith met J. Brown at 10 a.m. on Monday.', '"It went well," he said!', "Did it?", "Yes."]


def test_words_keep_inner_punctuation():
    assert off.words("Time-Warner's $1.13bn deal, (U.S.)") == ["Time-Warner's", "$", "1.13bn", "deal", ",", "(", "U.S", ".", ")"]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("sizes", [(5, 5, 5), (40, 3, 17, 22), (10, 11)])
def test_same_label_pairs_is_the_ag_pair_construction(seed, sizes):
    labels = np.repeat(np.arange(len(sizes)), sizes)
    first, second, same = off.same_label_pairs(labels, np.random.default_rng(seed))
    n = len(labels)
    assert len(first) == n  # as many pairs as items
    assert np.bincount(np.concatenate([first, second]), minlength=n).tolist() == [2] * n  # each item exactly twice
    assert np.all(first != second)
    assert np.array_equal(labels[first] == labels[second], same.astype(bool))
    assert abs(same.sum() - n / 2) <= len(sizes)  # balanced up to one item per label


def test_same_label_pairs_stays_valid_when_one_label_dominates():
    labels = np.array([0] * 20 + [1])
    first, second, same = off.same_label_pairs(labels, np.random.default_rng(0))
    assert np.bincount(np.concatenate([first, second])).tolist() == [2] * 21
    assert np.array_equal(labels[first] == labels[second], same.astype(bool))


def test_truecase_and_punct_examples():
    words, tags = off.truecase_example("Then Tony Blair met the BBC. They talked.")
    assert words == ["then", "tony", "blair", "met", "the", "bbc", ".", "they", "talked", "."]
    assert tags == [-100, 1, 1, 0, 0, 1, -100, -100, 0, -100]
    words, tags = off.punct_example('Hello, world. "Is it?" Yes!')
    assert words == ["hello", "world", "is", "it", "yes"]
    assert [off.PUNCT_TAGS[t] for t in tags] == ["comma", "period", "none", "question/exclamation", "question/exclamation"]


def test_each_corruption_is_the_one_word_edit_it_names():
    tokens = off.words("The firm said profits were rising in the year.")
    rng = np.random.default_rng(0)
    kinds = set()
    for _ in range(60):
        out, kind = off.corrupt_sentence(tokens, rng)
        kinds.add(kind)
        if kind == "repeat":  # one word written twice in a row
            i = next(k for k in range(len(tokens)) if out[k] != tokens[k]) if out[:len(tokens)] != tokens else len(tokens) - 1
            assert out[:i] + out[i + 1:] == tokens and out[i] == out[i - 1]
        elif kind == "swap":  # a function word and the word after it trade places
            diff = [k for k in range(len(tokens)) if out[k] != tokens[k]]
            assert len(out) == len(tokens) and len(diff) == 2 and diff[1] == diff[0] + 1
            assert tokens[diff[0]] in off.FUNCTION_WORDS and out[diff[1]] == tokens[diff[0]] and out[diff[0]] == tokens[diff[1]]
        else:  # one word takes the other number
            diff = [k for k in range(len(tokens)) if out[k] != tokens[k]]
            assert kind == "agreement" and len(out) == len(tokens) and len(diff) == 1
            assert (tokens[diff[0]], out[diff[0]]) in {("were", "was")}
    assert kinds == set(off.CORRUPTIONS)


def test_a_corruption_the_sentence_has_no_place_for_falls_back_to_repeat():
    tokens = off.words("Markets rallied strongly yesterday.")  # no function word before a word, no agreement word
    rng = np.random.default_rng(1)
    for _ in range(20):
        out, kind = off.corrupt_sentence(tokens, rng)
        assert kind == "repeat" and len(out) == len(tokens) + 1


def test_agreement_pairs_go_both_ways():
    assert all(off.AGREEMENT[off.AGREEMENT[w]] == w and off.AGREEMENT[w] != w for w in off.AGREEMENT)
    assert off.AGREEMENT["is"] == "are" and off.AGREEMENT["doesn't"] == "don't"


def test_acceptability_rows_are_short_sentences_and_the_named_edit_of_them():
    frames = load_frames("bbc-acceptability")
    train = frames["train"]
    assert set(train.corruption) == {"none", *off.CORRUPTIONS}
    assert (train.label == (train.corruption == "none")).all()
    articles = off.bbc_articles(0).set_index("doc_id").sentences
    for row in train.itertuples():  # each row is its article's sentence of <= 15 words, as written or edited once
        doc, i = row.id.split("#")
        source = articles[doc][int(i)]
        assert len(source.split()) <= 15
        tokens = off.words(source)
        if row.corruption == "none":
            assert row.text == off.detokenize(tokens)
        else:
            assert row.text != off.detokenize(tokens) and abs(len(off.words(row.text)) - len(tokens)) <= 1
    assert 0.45 < train.label.mean() < 0.55


def test_numbers_with_thousands_separators_are_one_word():
    assert off.words("It cost 464,000 pounds, or 1,250.5m, in 2004, 12 said.") == [
        "It", "cost", "464,000", "pounds", ",", "or", "1,250.5m", ",", "in", "2004", ",", "12", "said", "."]
    assert off.detokenize(off.words("Sales of 1,500,000 units, up 3.5%.")) == "Sales of 1,500,000 units, up 3.5%."


def test_cloze_blanks_a_headline_name_found_in_the_body():
    ex = off.cloze_example("Ad sales boost Time Warner profit", ["Profits rose.", "Time Warner said on Friday it owns Google shares."], np.random.default_rng(0))
    assert ex["question"] == "Ad sales boost _____ profit"
    assert ex["context"][ex["answer_start"]:].startswith("Time Warner") and ex["answer_text"] == "Time Warner"
    assert off.cloze_example("Nothing matches here", ["Completely different text."], np.random.default_rng(0)) is None


def _docs(row_id: str) -> set:
    return {part.split("#")[0] for part in row_id.split("|")}


@pytest.mark.parametrize("name", [n for n in OFFLINE_TASKS if n.startswith("bbc")])
def test_no_article_is_in_two_splits(name):
    frames = load_frames(name)
    docs = {split: set().union(*(_docs(i) for i in frame.id)) for split, frame in frames.items()}
    assert not docs["train"] & docs["validation"] and not docs["train"] & docs["test"] and not docs["validation"] & docs["test"]


def test_duplicate_articles_are_dropped_before_splitting():
    frames = load_frames("bbc-topic")
    assert sum(len(f) for f in frames.values()) < 2225  # the corpus repeats 133 articles
    texts = {split: set(frame.text) for split, frame in frames.items()}
    assert not texts["train"] & texts["test"] and not texts["train"] & texts["validation"]


@pytest.mark.parametrize("name", OFFLINE_TASKS)
def test_tasks_are_deterministic_for_a_seed(name):
    a, b, c = load_frames(name, seed=0), load_frames(name, seed=0), load_frames(name, seed=1)
    assert all(a[s].equals(b[s]) for s in a)
    assert not a["train"].equals(c["train"])


@pytest.mark.parametrize("name", ["bbc-pair", "tweet-pair", "bbc-next", "bbc-headline", "bbc-acceptability", "bbc-paraphrase", "bbc-entailment", "bbc-lede"])
def test_binary_tasks_are_balanced(name):
    for frame in load_frames(name).values():
        assert abs(frame.label.mean() - 0.5) < 0.03


def test_continuation_offers_the_next_sentence_among_three_of_other_same_topic_articles():
    """bbc-continuation (SWAG's role): the right choice is the sentence after ``text`` in its article; the three
    others are distinct sentences of other articles of the same topic; the right position is spread evenly."""
    frames = load_frames("bbc-continuation")
    articles = off.bbc_articles(0).set_index("doc_id")
    train = frames["train"]
    for row in train.head(200).itertuples():
        first, *choice_ids = row.id.split("|")
        doc, i = first.split("#")
        assert len(row.choices) == len(set(row.choices)) == 4 and row.text == articles.sentences[doc][int(i)]
        right = choice_ids[row.label]
        assert right == f"{doc}#{int(i) + 1}" and row.choices[row.label] == articles.sentences[doc][int(i) + 1]
        for k, other in enumerate(choice_ids):
            if k != row.label:
                other_doc, j = other.split("#")
                assert other_doc != doc and articles.topic[other_doc] == articles.topic[doc]
                assert row.choices[k] == articles.sentences[other_doc][int(j)]
    shares = train.label.value_counts(normalize=True)
    assert sorted(shares.index) == [0, 1, 2, 3] and (abs(shares - 0.25) < 0.03).all()


def test_facts_are_numbers_and_names_but_not_titles_or_first_words():
    tokens = off.words("Shares in Time Warner rose 8% to $1.13bn, Mr Smith said on 464,000 trades.")
    facts = [t for i, t in enumerate(tokens) if off.is_fact(tokens, i)]
    assert facts == ["Time", "Warner", "8", "1.13bn", "Smith", "464,000"]  # not "Shares" (first) nor "Mr" (a title)


def test_a_dropped_word_is_a_lower_case_word_and_never_a_fact_or_a_negation():
    tokens = off.words("Mr Smith did not sell the 500 shares")
    rng = np.random.default_rng(0)
    dropped = set()
    for _ in range(50):
        out = off.drop_word(tokens, rng)
        assert len(out) == len(tokens) - 1
        (gone,) = set(tokens) - set(out)
        dropped.add(gone)
    assert dropped == {"did", "sell", "the", "shares"}
    assert off.drop_word(off.words("Not no never 12 Smith"), rng) is None


def test_a_swapped_fact_is_another_of_its_type_that_the_sentence_lacks():
    tokens = off.words("Profits at Acme rose 76% in 2004")
    pools = (["76", "2004", "1999"], ["Acme", "Globex"])
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(40):
        out = off.swap_fact(tokens, pools, rng)
        changed = [(a, b) for a, b in zip(tokens, out) if a != b]
        assert len(out) == len(tokens) and len(changed) == 1
        seen.add(changed[0])
    assert seen == {("Acme", "Globex"), ("76", "1999"), ("2004", "1999")}
    assert off.swap_fact(off.words("it rose sharply"), pools, rng) is None


def _one_word_dropped(longer: str, shorter: str) -> bool:
    a, b = off.words(longer), off.words(shorter)
    return len(a) == len(b) + 1 and any(a[:i] + a[i + 1:] == b for i in range(len(a)))


def _one_fact_changed_and_one_word_dropped(longer: str, shorter: str) -> bool:
    a, b = off.words(longer), off.words(shorter)
    if len(a) != len(b) + 1:
        return False
    for i in range(len(a)):
        rest = a[:i] + a[i + 1:]
        diff = [k for k, (x, y) in enumerate(zip(rest, b)) if x != y]
        if len(diff) == 1 and off.is_fact(rest, diff[0]):
            return True
    return False


def test_paraphrase_pairs_differ_by_a_dropped_word_and_negatives_also_by_one_fact():
    frame = load_frames("bbc-paraphrase")["train"].head(300)
    for row in frame.itertuples():
        longer, shorter = sorted([row.text, row.text_pair], key=lambda t: -len(off.words(t)))
        if row.label == 1:
            assert _one_word_dropped(longer, shorter), row
        else:
            assert _one_fact_changed_and_one_word_dropped(longer, shorter) and not _one_word_dropped(longer, shorter), row
    assert 0.3 < (frame.text.str.len() > frame.text_pair.str.len()).mean() < 0.7  # the edited side is either one


def test_entailment_hypotheses_are_premise_sentences_or_not():
    frame = load_frames("bbc-entailment")["train"].head(300)
    articles = off.bbc_articles(0).set_index("doc_id")
    kinds = set()
    for row in frame.itertuples():
        premise_id, hypothesis_id = row.id.split("|")
        doc, start = premise_id.split("#")
        j = int(hypothesis_id.split("#")[1])
        sentences = [off.detokenize(off.words(s)) for s in articles.sentences[doc]]
        assert row.text == " ".join(sentences[int(start):int(start) + 2])
        inside = int(start) <= j < int(start) + 2
        if row.label == 0:  # entailment
            assert inside and _one_word_dropped(sentences[j], row.text_pair)
        elif inside:
            assert _one_fact_changed_and_one_word_dropped(sentences[j], row.text_pair)
            kinds.add("fact changed")
        else:
            assert _one_word_dropped(sentences[j], row.text_pair)
            kinds.add("from outside")
    assert kinds == {"fact changed", "from outside"}


def test_similarity_grades_the_second_sentence_by_where_it_comes_from():
    frame = load_frames("bbc-similarity")["train"]
    articles = off.bbc_articles(0).set_index("doc_id")
    for row in frame.head(400).itertuples():
        (doc_a, i), (doc_b, j) = [(d, int(k)) for d, k in (part.split("#") for part in row.id.split("|"))]
        assert row.text == off.detokenize(off.words(articles.sentences[doc_a][i]))
        same_topic = articles.topic[doc_a] == articles.topic[doc_b]
        expected = {4: doc_a == doc_b and i == j, 3: doc_a == doc_b and abs(i - j) == 1, 2: doc_a == doc_b and abs(i - j) >= 3,
                    1: doc_a != doc_b and same_topic, 0: not same_topic}[int(row.label)]
        assert expected, row
        if row.label == 4:
            assert _one_word_dropped(row.text, row.text_pair)
    shares = frame.label.value_counts(normalize=True)
    assert sorted(shares.index) == [0.0, 1.0, 2.0, 3.0, 4.0] and (abs(shares - 0.2) < 0.03).all()


def test_lede_pairs_a_headline_with_its_first_sentence_or_another_same_topic_one_each_once():
    """bbc-lede (QQP's role): positives are the article's own first sentence; negatives the first sentence of
    another article of the same topic; every first sentence is once a positive and once a negative."""
    articles = off.bbc_articles(0).set_index("doc_id")
    for frame in load_frames("bbc-lede").values():
        for row in frame.itertuples():
            doc, lede = row.id.split("|")
            other = lede.split("#")[0]
            assert row.text == articles.headline[doc] and row.text_pair == articles.sentences[other][0]
            assert (other == doc) == (row.label == 1) and articles.topic[other] == articles.topic[doc]
        by_label = frame.groupby("label").text_pair.apply(sorted)
        assert by_label[0] == by_label[1]  # the same ledes on both sides
