"""RACE reader: both layouts, level selection, labels, and errors that name file and article."""

import json
import os
import re

import pytest

from albert_tf.race import reader
from tests import race_fixtures


def _without_source(articles):
    return [article.__class__(**{**article.__dict__, "source": ""}) for article in articles]


def test_both_layouts_read_the_same_articles(tmp_path):
    data = race_fixtures.make_articles(num_per_level=12)
    race_fixtures.write_all_txt(tmp_path / "original", "train", data)
    race_fixtures.write_per_article(tmp_path / "official", "train", data)
    from_all_txt = list(reader.read_articles(str(tmp_path / "original"), "train"))
    from_files = list(reader.read_articles(str(tmp_path / "official"), "train"))
    assert len(from_all_txt) == 24
    assert _without_source(from_all_txt) == _without_source(from_files)
    # Natural order: 2.txt before 10.txt, as the lines of all.txt.
    assert [a.article_id for a in from_files[:12]] == [f"middle{n}.txt" for n in range(1, 13)]
    assert from_all_txt[0].source.endswith(os.path.join("middle", "all.txt") + " line 1")
    assert from_files[12].source.endswith(os.path.join("high", "1.txt"))


def test_labels_levels_and_level_flags(tmp_path):
    data = race_fixtures.make_articles(num_per_level=2)
    race_fixtures.write_all_txt(tmp_path, "dev", data)
    articles = list(reader.read_articles(str(tmp_path), "dev"))
    assert [a.level for a in articles] == ["middle", "middle", "high", "high"]
    first = articles[0]
    expected = [ord(letter) - ord("A") for letter in data["middle"][0]["answers"]]
    assert list(first.labels) == expected
    for question_options, label, question in zip(first.options, first.labels, first.questions):
        # The correct option is the one the fixture took from the article.
        assert question_options[label].replace("the ", "") in first.article
    assert reader.levels_from_flags(high_only=True) == ("high",)
    assert reader.levels_from_flags(middle_only=True) == ("middle",)
    assert reader.levels_from_flags() == ("middle", "high")
    high = list(reader.read_articles(str(tmp_path), "dev", reader.levels_from_flags(high_only=True)))
    assert [a.article_id for a in high] == ["high1.txt", "high2.txt"]
    with pytest.raises(ValueError, match="--high_only and --middle_only"):
        reader.levels_from_flags(high_only=True, middle_only=True)


def test_all_txt_wins_over_the_per_article_files_beside_it(tmp_path):
    data = race_fixtures.make_articles(num_per_level=3)
    race_fixtures.write_per_article(tmp_path, "test", data)
    race_fixtures.write_all_txt(tmp_path, "test", {"middle": data["middle"][:1], "high": data["high"]})
    articles = list(reader.read_articles(str(tmp_path), "test", ("middle",)))
    assert [a.article_id for a in articles] == ["middle1.txt"]


def test_missing_level_directory_is_named(tmp_path):
    race_fixtures.write_all_txt(tmp_path, "train", {"high": race_fixtures.make_articles(1)["high"]})
    with pytest.raises(reader.RaceDataError, match=r"RACE/train/middle: no such directory.*--high_only"):
        list(reader.read_articles(str(tmp_path), "train"))
    (tmp_path / "RACE" / "train" / "middle").mkdir()
    with pytest.raises(reader.RaceDataError, match=r"middle: holds neither `all.txt` nor"):
        list(reader.read_articles(str(tmp_path), "train"))


def _broken(article, **changes):
    broken = dict(article)
    broken.update(changes)
    return broken


BAD_INPUTS = {
    "answers and questions differ": (
        lambda a: _broken(a, answers=a["answers"][:2]),
        r"3 questions, 3 option lists and 2 answers"),
    "answer outside A-D": (
        lambda a: _broken(a, answers=[a["answers"][0], "E", a["answers"][2]]),
        r"question 1 \(.*\) has answer 'E'; expected one of A, B, C, D"),
    "three options": (
        lambda a: _broken(a, options=[a["options"][0], a["options"][1], a["options"][2][:3]]),
        r"question 2 \(.*\) has options .*; expected a list of exactly 4 strings"),
    "five options": (
        lambda a: _broken(a, options=[a["options"][0] + ["extra"]] + a["options"][1:]),
        r"question 0 .*expected a list of exactly 4 strings"),
    "missing key": (
        lambda a: {k: v for k, v in a.items() if k != "options"},
        r"lacks the key\(s\) options"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
@pytest.mark.parametrize("layout", ["all.txt", "per-article"])
def test_bad_article_errors_name_the_file_and_article(tmp_path, case, layout):
    data = race_fixtures.make_articles(num_per_level=3)
    breaker, message = BAD_INPUTS[case]
    data["high"][1] = breaker(data["high"][1])
    if layout == "all.txt":
        race_fixtures.write_all_txt(tmp_path, "train", data)
        where = os.path.join("RACE", "train", "high", "all.txt") + " line 2"
    else:
        race_fixtures.write_per_article(tmp_path, "train", data)
        where = os.path.join("RACE", "train", "high", "2.txt")
    with pytest.raises(reader.RaceDataError) as error:
        list(reader.read_articles(str(tmp_path), "train"))
    text = str(error.value)
    assert where + ": article `high2.txt`" in text
    assert re.search(message, text), text


@pytest.mark.parametrize("layout", ["all.txt", "per-article"])
def test_malformed_json_names_the_file_and_line(tmp_path, layout):
    data = race_fixtures.make_articles(num_per_level=3)
    if layout == "all.txt":
        race_fixtures.write_all_txt(tmp_path, "dev", data)
        path = tmp_path / "RACE" / "dev" / "middle" / "all.txt"
        lines = path.read_text().splitlines()
        lines[2] = lines[2][:-5]
        path.write_text("\n".join(lines) + "\n")
        expected = f"{path} line 3: malformed JSON"
    else:
        race_fixtures.write_per_article(tmp_path, "dev", data)
        path = tmp_path / "RACE" / "dev" / "middle" / "3.txt"
        path.write_text(path.read_text()[:-5])
        expected = f"{path}: malformed JSON"
    with pytest.raises(reader.RaceDataError, match=expected.replace("\\", "\\\\")):
        list(reader.read_articles(str(tmp_path), "dev"))


def test_blank_lines_in_all_txt_are_skipped(tmp_path):
    data = race_fixtures.make_articles(num_per_level=2)
    directory = tmp_path / "RACE" / "dev" / "middle"
    directory.mkdir(parents=True)
    lines = [json.dumps(a) for a in data["middle"]]
    (directory / "all.txt").write_text(lines[0] + "\n\n" + lines[1] + "\n\n")
    articles = list(reader.read_articles(str(tmp_path), "dev", ("middle",)))
    assert [a.article_id for a in articles] == ["middle1.txt", "middle2.txt"]
    assert articles[1].source.endswith("all.txt line 3")


def test_only_newlines_end_all_txt_lines(tmp_path):
    data = race_fixtures.make_articles(num_per_level=2)
    data["middle"][0]["article"] += " Then\u2028she left.\x85"
    directory = tmp_path / "RACE" / "dev" / "middle"
    directory.mkdir(parents=True)
    lines = [json.dumps(a, ensure_ascii=False) for a in data["middle"]]
    (directory / "all.txt").write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    articles = list(reader.read_articles(str(tmp_path), "dev", ("middle",)))
    assert [a.article_id for a in articles] == ["middle1.txt", "middle2.txt"]
    assert articles[0].article.endswith("Then\u2028she left.\x85")
