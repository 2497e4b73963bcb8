from mtllib.data.corpora import BBC_TOPICS, TWEET_SENTIMENTS, load_bbc_news, load_tweets


def test_bbc_news_has_every_article_with_folder_labels():
    df = load_bbc_news()
    assert len(df) == 2225
    assert df.doc_id.is_unique
    # labels follow the sorted folder names, whatever order the file system lists them in
    assert (df.topic.map(BBC_TOPICS.index) == df.label).all()
    assert df.topic.value_counts().to_dict() == {"sports": 511, "business": 510, "politics": 417, "tech": 401, "entertainment": 386}
    assert (df.headline.str.len() > 0).all() and (df.body.str.len() > 100).all()


def test_bbc_article_in_cp1252_is_decoded_not_garbled():
    row = load_bbc_news().set_index("doc_id").loc["sports/199"]
    assert "\u00a315.8m" in row.body  # a pound sign, not U+FFFD


def test_tweets_cleaning_drops_garbled_and_duplicates():
    raw = load_tweets(clean=False)
    clean = load_tweets()
    assert len(raw) == 38158 == clean.attrs["raw_rows"]
    dropped = clean.attrs["dropped"]
    assert dropped["garbled"] == raw.text.str.contains("\ufffd", regex=False).sum() > 0
    assert len(clean) == len(raw) - dropped["garbled"] - dropped["duplicate"]
    assert not clean.text.str.contains("\ufffd", regex=False).any()
    assert clean.text.is_unique
    assert (clean.sentiment.map(TWEET_SENTIMENTS.index) == clean.label).all()
