"""Small RACE data sets written in the tests, in the original's and the official layout.

Articles are short stories built from templates. Every question has its correct option taken
from the article and three distractors from a pool that never appears in the articles, at a
random (seeded) position: a tiny model can learn that in a couple of hundred steps, and chance
stays at 25%. There are cloze questions (with `_`) and plain ones.
"""

import json
import os
import random

PEOPLE = [("Tom", "his", "brother"), ("Mary", "her", "mother"), ("Lucy", "her", "grandfather"),
          ("Jack", "his", "sister"), ("Ann", "her", "father"), ("Peter", "his", "uncle"),
          ("Kate", "her", "aunt"), ("Mike", "his", "cousin")]
PLACES = ["market", "library", "river", "station", "museum", "garden", "bakery", "hospital"]
FOODS = ["apples", "bread", "fish", "cheese", "rice", "eggs", "milk", "oranges"]
HOBBIES = ["painting pictures", "playing chess", "writing letters", "reading stories",
           "singing songs", "making kites"]
DISTRACTORS = ["a spaceship", "the volcano", "purple snow", "a dragon cave", "the moon base",
               "golden rockets", "an ice castle", "the jungle tower", "silver dinosaurs",
               "a flying carpet"]


def _article(rng, number, level):
    name, pronoun, relative = rng.choice(PEOPLE)
    place, food, hobby = rng.choice(PLACES), rng.choice(FOODS), rng.choice(HOBBIES)
    text = (f"{name} lives in a small town near the sea. Every Saturday morning, {name} walks "
            f"to the {place} with {pronoun} {relative}. They usually buy {food} there and talk "
            f"with their neighbours. In the evening {name} enjoys {hobby}, because it makes "
            f"{pronoun} family happy. \"It is the best part of my week,\" {name} says.")
    asked = [(f"Where does {name} go every Saturday morning?", f"the {place}"),
             (f"{name} and {pronoun} {relative} usually buy _ there.", food),
             (f"What does {name} enjoy in the evening?", hobby)]
    questions, options, answers = [], [], []
    for question, correct in asked:
        choices = rng.sample(DISTRACTORS, 3)
        position = rng.randrange(4)
        choices.insert(position, correct)
        questions.append(question)
        options.append(choices)
        answers.append("ABCD"[position])
    return {"answers": answers, "options": options, "questions": questions, "article": text,
            "id": f"{level}{number}.txt"}


def make_articles(num_per_level=4, seed=0):
    """{level: [article dict, ...]} for "middle" and "high"."""
    rng = random.Random(seed)
    return {level: [_article(rng, number, level) for number in range(1, num_per_level + 1)]
            for level in ("middle", "high")}


def write_all_txt(data_dir, split, articles_by_level):
    """The original's layout: RACE/<split>/<level>/all.txt, one JSON article per line."""
    for level, articles in articles_by_level.items():
        directory = os.path.join(data_dir, "RACE", split, level)
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "all.txt"), "w", encoding="utf-8") as out:
            for article in articles:
                out.write(json.dumps(article) + "\n")


def write_per_article(data_dir, split, articles_by_level):
    """The official download's layout: RACE/<split>/<level>/<n>.txt, one article per file."""
    for level, articles in articles_by_level.items():
        directory = os.path.join(data_dir, "RACE", split, level)
        os.makedirs(directory, exist_ok=True)
        for article in articles:
            number = article["id"][len(level):-len(".txt")]
            with open(os.path.join(directory, f"{number}.txt"), "w", encoding="utf-8") as out:
                json.dump(article, out)
