from albert_tf.demo import data_sources


def test_brown_detokenization():
    line = "The/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' ,/, it/pps did/dod n't/* ./."
    assert data_sources.brown_sentence(line) == 'The jury said "no evidence", it didn\'t.'


def test_real_data_is_there(real_data):
    brown = real_data["brown"]
    assert len(brown) == data_sources.BROWN_SHARDS
    text = "".join(open(path, encoding="utf-8").read() for path in brown)
    assert text.count("\n\n") >= 490  # 500 documents separated by blank lines
    assert len(text) > 5_000_000
    reviews = open(real_data["movie_reviews"], encoding="utf-8").read().splitlines()
    assert len(reviews) == 10605 and all(len(line.split("\t")) == 3 for line in reviews)
    assert "Botchan" in open(real_data["botchan"], encoding="utf-8").read()
