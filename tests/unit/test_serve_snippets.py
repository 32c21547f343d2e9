"""Query-biased snippets: the terms a hit was scored with, the best window (checked against brute force) and the
spans of its matched words."""

import random

import pytest

from clirplug.serve.snippets import SNIPPET_WORDS, Matcher, best_window, highlights, query_terms, snippet

pytestmark = pytest.mark.unit


def stem(word: str) -> tuple[str, ...]:
    """A toy analyzer: lower case, punctuation off, a plural s off, stopwords dropped."""
    word = word.lower().strip(".,;:()")
    if word in {"a", "the", "of"} or not word:
        return ()
    return (word[:-1] if word.endswith("s") and len(word) > 3 else word,)


@pytest.mark.parametrize("translation, terms", [
    ("copy files into a directory", {"copy": 1.0, "files": 1.0, "into": 1.0, "a": 1.0, "directory": 1.0}),
    ("#wsum(0.7 file 0.3 data) #wsum(1 copy)", {"file": 0.7, "data": 0.3, "copy": 1.0}),
    ("#wsum(0.6 #1(data set) 0.4 data)", {"data": 0.6, "set": 0.6}),  # a phrase's words; a word's largest weight
    ("dt words | #wsum(0.5 x 0.5 y)", {"dt": 1.0, "words": 1.0, "x": 0.5, "y": 0.5}),  # a fusion's parts
    ("", {}),
    (None, {}),
])
def test_the_terms_a_hit_was_scored_with(translation, terms):
    assert query_terms(translation) == terms


def brute_force(matched, weights, size):
    def weight(start):
        return sum(weights[t] for t in {t for t in matched[start:start + size] if t is not None})

    starts = range(max(1, len(matched) - size + 1))
    best = max(weight(start) for start in starts)
    return next(start for start in starts if weight(start) == best) if best > 0 else 0


def test_the_best_window_is_the_brute_forces():
    rng = random.Random(7)
    weights = {"a": 1.0, "b": 0.5, "c": 0.25, "d": 2.0}
    for _ in range(500):
        length, size = rng.randint(0, 60), rng.randint(1, 12)
        matched = [rng.choice([None, None, None, *weights]) for _ in range(length)]
        assert best_window(matched, weights, size) == brute_force(matched, weights, size), (matched, size)


def test_a_window_counts_each_term_once():
    # three "a" at the start weigh less than "a" and "b" together later
    matched = ["a", "a", "a", None, None, "a", "b"]
    assert best_window(matched, {"a": 1.0, "b": 1.0}, 3) == 4


def test_the_snippet_is_the_matching_window_with_its_words_marked():
    words = [f"w{i}" for i in range(100)]
    words[60:63] = ["Files,", "of", "directories"]
    text = " ".join(words)
    shown, spans = snippet(text, Matcher(stem), {"file": 1.0, "directory": 1.0, "directories": 1.0})
    assert shown.startswith("... w47 ") and shown.endswith(" w76 ...")  # the window holding both, them in its middle
    assert [shown[start:end] for start, end in spans] == ["Files,", "directories"]
    assert len(shown.split()) == SNIPPET_WORDS + 2


def test_without_a_match_the_snippet_is_the_first_words():
    text = " ".join(f"w{i}" for i in range(40))
    shown, spans = snippet(text, Matcher(stem), {"nothing": 1.0})
    assert shown == " ".join(f"w{i}" for i in range(SNIPPET_WORDS)) + " ..." and spans == []
    assert snippet("short text", Matcher(stem), {}) == ("short text", [])


def test_title_highlights():
    title = "convert images into a different image format"
    assert [title[a:b] for a, b in highlights(title, Matcher(stem), {"image": 0.5, "format": 1.0})] == \
        ["images", "image", "format"]


def test_words_sharing_no_prefix_with_a_query_term_are_not_analyzed():
    seen = []

    def analyze(word):
        seen.append(word)
        return stem(word)

    snippet("copy the files into folders", Matcher(analyze), {"files": 1.0})
    assert sorted(seen) == ["files"]  # analyzed once (cached), and no other word
