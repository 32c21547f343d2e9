"""PSQ tables: file formats, Pr_grammar / Pr_nbest by hand, heuristics, interpolation, thresholds."""

import gzip
import json
from types import SimpleNamespace

import pytest

from clirplug.errors import ClirplugError
from clirplug.mt.grammar import Rule, iter_grammar, parse_rule, source_matches
from clirplug.qt.psq_tables import (
    PsqBuilder,
    PsqSettings,
    PsqTable,
    aligned_targets,
    derivation_weights,
    drop_target_stopwords,
    grammar_table,
    interpolate,
    nbest_table,
    orphan_targets,
    prune,
)
from clirplug.stopwords import load_stopwords

pytestmark = pytest.mark.unit

TABLE = {"datei": {"file": 0.7, "data file": 0.2, "the": 0.1}, "liste": {"list": 1.0}}


# -- formats -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["table.json", "table.tsv"])
def test_round_trip(tmp_path, name):
    PsqTable(TABLE).save(tmp_path / name)
    assert PsqTable.load(tmp_path / name) == PsqTable(TABLE)


def test_reads_patapsco_json(tmp_path):
    path = tmp_path / "patapsco.json"
    path.write_text(json.dumps({"haus": {"house": 0.75, "home": 0.25}}), encoding="utf-8")
    assert PsqTable.load(path).translations("haus") == {"house": 0.75, "home": 0.25}


def test_tsv_layout_and_order(tmp_path):
    PsqTable(TABLE).save(tmp_path / "t.tsv")
    lines = (tmp_path / "t.tsv").read_text(encoding="utf-8").splitlines()
    assert lines == ["datei\tfile\t0.7", "datei\tdata file\t0.2", "datei\tthe\t0.1", "liste\tlist\t1"]


@pytest.mark.parametrize(("name", "text", "message"), [
    ("bad.tsv", "datei\tfile\n", "bad.tsv:1: expected 'source<TAB>target<TAB>probability'"),
    ("bad.tsv", "a\tb\t0.5\na\tb\t0.2\n", "bad.tsv:2: pair 'a' -> 'b' occurs twice"),
    ("bad.tsv", "a\tb\tx\n", "bad.tsv:1: probability 'x' is not a number"),
    ("bad.tsv", "a\tb\t1.5\n", "bad.tsv:1: expected a probability in [0, 1]"),
    ("bad.json", "{\"a\": [1]}", "field 'a': expected an object"),
    ("bad.json", "{\"a\": {\"b\": \"x\"}}", "field 'a' -> 'b': expected a probability"),
    ("bad.json", "{\"a\":", "bad.json:1: invalid JSON"),
])
def test_bad_files_name_file_and_line(tmp_path, name, text, message):
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(ClirplugError, match=message.replace("[", r"\[").replace("]", r"\]")):
        PsqTable.load(tmp_path / name)


# -- heuristics, Pr_grammar, Pr_nbest ------------------------------------------------------------
def test_heuristics():
    tgt = ["marque", "de", "fabrique"]
    assert aligned_targets(tgt, [0, 1, 2], "one-to-one") == ["marque", "de", "fabrique"]
    assert aligned_targets(tgt, [0, 1, 2], "one-to-none") == []
    assert aligned_targets(tgt, [2, 0, 1], "one-to-many") == ["marque de fabrique"]
    assert aligned_targets(tgt, [0], "one-to-none") == ["marque"]
    # one-to-many: the span keeps stopwords and punctuation between the aligned words (phrase gaps),
    # and is no expression when a content word lies in between (Ivory's isConsecutiveWithStopwords)
    words = ["apply", "a", "template", "to", "(", "records", "now"]
    stop = frozenset({"a", "to"})
    assert aligned_targets(words, [0, 2], "one-to-many", stop) == ["apply a template"]
    assert aligned_targets(words, [2, 5], "one-to-many", stop) == ["template to ( records"]
    assert aligned_targets(words, [0, 2], "one-to-many") == []
    assert aligned_targets(words, [0, 5], "one-to-many", stop) == []
    assert aligned_targets(words, [0, 5], "one-to-one", stop) == ["apply", "records"]
    with pytest.raises(ClirplugError, match="unknown alignment heuristic"):
        aligned_targets(["a", "b"], [0, 1], "many")


RULES = [
    # likelihoods 10**-EgivenF: 0.5, 0.25, 0.1, 0.2 (the last does not apply: "haus" is not in the query)
    parse_rule("[X] ||| brand ||| marque de fabrique ||| EgivenF=0.30103 ||| 0-0 0-1 0-2"),
    parse_rule("[X] ||| brand [X,1] ||| marque [X,1] ||| EgivenF=0.60206 ||| 0-0 1-1"),
    parse_rule("[X] ||| nestle brand ||| nestle marque ||| EgivenF=1 ||| 0-0 1-1"),
    parse_rule("[X] ||| haus ||| maison ||| EgivenF=0.69897 ||| 0-0"),
]


def test_grammar_table_by_hand():
    tokens = ["nestle", "brand", "produkte"]  # "brand [X,1]" needs a token after "brand"
    many = grammar_table(RULES, tokens, "one-to-many")
    # brand: "marque de fabrique" 0.5, "marque" 0.25 + 0.1 -> normalized by 0.85
    assert many.translations("brand") == pytest.approx({"marque de fabrique": 0.5 / 0.85, "marque": 0.35 / 0.85})
    assert many.translations("nestle") == pytest.approx({"nestle": 1.0})
    assert "haus" not in many and "produkte" not in many
    assert grammar_table(RULES, ["nestle", "brand"], "one-to-many").translations("brand") == pytest.approx(
        {"marque de fabrique": 0.5 / 0.6, "marque": 0.1 / 0.6})
    one = grammar_table(RULES, tokens, "one-to-one")
    total = 3 * 0.5 + 0.25 + 0.1
    assert one.translations("brand") == pytest.approx(
        {"marque": (0.5 + 0.35) / total, "de": 0.5 / total, "fabrique": 0.5 / total})
    none = grammar_table(RULES, tokens, "one-to-none")
    assert none.translations("brand") == pytest.approx({"marque": 1.0})


def test_grammar_table_on_a_cdec_grammar(cdec_clef06):
    """Real cdec rules (positional features, feature 0 is EgivenF): every source token of the query
    gets a normalized distribution over target words of the rules that apply."""
    rules = list(iter_grammar(cdec_clef06 / "grammars" / "grammar.1.gz"))  # "Consumer Boycotts"
    tokens = ["consum", "boycott"]
    table = grammar_table(rules, tokens, "one-to-one")
    assert set(table.table) == {"consum", "boycott"}
    for src in tokens:
        assert sum(table.translations(src).values()) == pytest.approx(1.0)
        assert all(" " not in tgt and not tgt.startswith("[") for tgt in table.translations(src))
    assert next(iter(table.translations("consum"))).startswith("consomm")
    # brute force over the file for one pair: the likelihood mass of rules linking consum -> consomm
    mass, total = 0.0, 0.0
    with gzip.open(cdec_clef06 / "grammars" / "grammar.1.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            rule = parse_rule(line)
            if not source_matches(rule.src, tokens):
                continue
            weight = 10 ** -float(rule.features[0][1])
            for i, j in rule.alignment:
                if rule.src[i] == "consum" and not rule.tgt[j].startswith("["):
                    total += weight
                    mass += weight * (rule.tgt[j] == "consomm")
    assert table.translations("consum").get("consomm", 0.0) == pytest.approx(mass / total)


def test_nbest_table_by_hand():
    derivation = SimpleNamespace
    nbest = [
        derivation(words=("brand", "mark"), score=-1.0, alignment=((0, 0), (1, 1))),
        derivation(words=("trademark",), score=-2.0, alignment=((0, 0), (1, 0))),
        derivation(words=("fire", "brand"), score=-2.0, alignment=((1, 0), (1, 1))),
    ]
    weights = derivation_weights([-1.0, -2.0, -2.0])
    assert weights == pytest.approx([10 / 12, 1 / 12, 1 / 12])
    assert derivation_weights([-1.0, -2.0, -2.0], scale=0.5) == pytest.approx(
        [10**0.5 / (10**0.5 + 2), 1 / (10**0.5 + 2), 1 / (10**0.5 + 2)])
    table = nbest_table(["nestle", "marke"], nbest, "one-to-many")
    assert table.translations("nestle") == pytest.approx({"brand": 10 / 11, "trademark": 1 / 11})
    assert table.translations("marke") == pytest.approx({"mark": 10 / 12, "trademark": 1 / 12, "fire brand": 1 / 12})
    one = nbest_table(["nestle", "marke"], nbest, "one-to-one")
    assert one.translations("marke") == pytest.approx({"mark": 10 / 13, "trademark": 1 / 13, "fire": 1 / 13,
                                                       "brand": 1 / 13})


# -- orphan target words ---------------------------------------------------------------------------
ORPHAN_NBEST = [
    SimpleNamespace(words=("delete", "the", "file", "now"), score=-1.0, alignment=((0, 1), (1, 2), (2, 0))),
    SimpleNamespace(words=("remove", "file"), score=-2.0, alignment=((1, 1), (2, 0))),
]


def test_orphan_targets_by_hand():
    tokens = ["die", "datei", "löschen"]
    # "the" is tied only to the dropped stopword "die", "now" to nothing; weights 10/11 and 1/11
    assert orphan_targets(tokens, ORPHAN_NBEST, lambda t: t != "die") == pytest.approx({"the": 10 / 11, "now": 10 / 11})
    assert orphan_targets(tokens, ORPHAN_NBEST, lambda t: True) == pytest.approx({"now": 10 / 11})
    # an orphan repeated in one derivation counts that derivation once
    twice = [SimpleNamespace(words=("now", "now"), score=0.0, alignment=())]
    assert orphan_targets(["x"], twice, lambda t: True) == {"now": 1.0}


def test_builder_adds_orphans_as_terms_of_their_own():
    tokens = ["die", "datei", "löschen"]
    assert "die" in load_stopwords("de")

    def build(spec):
        return PsqBuilder(PsqSettings.parse(spec), translate=lambda toks, n: ORPHAN_NBEST[:n]).sentence(tokens)

    plain = build("lambda=0:0:1,stop=small")
    assert plain == [pytest.approx({"file": 10 / 11 + 1 / 11}), pytest.approx({"delete": 10 / 11, "remove": 1 / 11})]
    # "the" is an English stopword: only "now" (mass 10/11) joins, as a term of its own
    assert build("lambda=0:0:1,stop=small,orphans=0.5") == plain + [{"now": 1.0}]
    assert build("lambda=0:0:1,stop=small,orphans=0.95") == plain
    # without stopwords "die" keeps its own distribution, so "the" is no orphan
    kept = build("lambda=0:0:1,stop=none,orphans=0.5")
    assert kept[0] == {"the": 1.0} and kept[-1] == {"now": 1.0} and len(kept) == 4
    assert PsqSettings.parse("orphans=0.2").spec().endswith(",orphans=0.2")
    assert "orphans" not in PsqSettings.parse("orphans=0").spec()
    with pytest.raises(ClirplugError, match="--psq orphans: must be at most 1"):
        PsqSettings.parse("orphans=2")
    with pytest.raises(ClirplugError, match="orphans needs the decoder"):
        PsqBuilder(PsqSettings.parse("orphans=0.5"), token=PsqTable(TABLE))


# -- interpolation, thresholds, stopwords, self-translation -----------------------------------------
def test_interpolate_and_prune():
    mixed = interpolate([{"a": 0.6, "b": 0.4}, {"b": 1.0}, {}], [0.5, 0.25, 0.25])
    assert mixed == pytest.approx({"a": 0.3, "b": 0.45})
    dist = {"a": 0.5, "b": 0.3, "c": 0.15, "d": 0.05}
    assert prune(dist, 0.0, 1.0) == pytest.approx(dist)
    assert prune(dist, 0.1, 1.0) == pytest.approx({"a": 0.5 / 0.95, "b": 0.3 / 0.95, "c": 0.15 / 0.95})
    # p_C: add options until the cumulative mass reaches 0.8 (b reaches it and is kept)
    assert prune(dist, 0.0, 0.8) == pytest.approx({"a": 0.5 / 0.8, "b": 0.3 / 0.8})
    assert prune(dist, 0.0, 0.5) == pytest.approx({"a": 1.0})
    assert prune(dist, 0.6, 1.0) == {}


def test_target_stopwords_keep_expressions_with_content():
    dist = {"the": 0.5, "of the": 0.1, "file": 0.3, "file of the": 0.1}
    assert drop_target_stopwords(dist, frozenset({"the", "of"})) == {"file": 0.3, "file of the": 0.1}


def test_stopword_lists():
    assert {"the", "of", "and"} <= load_stopwords("en-small") <= load_stopwords("en-large")
    assert len(load_stopwords("en-small")) == 33 and len(load_stopwords("en-large")) == 570
    assert {"der", "die", "und"} <= load_stopwords("de")
    with pytest.raises(ClirplugError, match="no stopword list"):
        load_stopwords("xx")


def test_builder_pipeline():
    token = PsqTable({"die": {"the": 0.9, "that": 0.1}, "datei": {"file": 0.6, "the": 0.3, "data": 0.1},
                      "liste": {"list": 1.0}})
    plain = PsqBuilder(PsqSettings(), token=token)
    # punctuation is dropped, a repeated token keeps one distribution each, unknown -> itself
    expected = [{"the": 0.9, "that": 0.1}, {"file": 0.6, "the": 0.3, "data": 0.1},
                {"file": 0.6, "the": 0.3, "data": 0.1}, {"printf": 1.0}]
    assert plain.sentence(["die", "datei", "(", "datei", "printf"]) == [pytest.approx(d) for d in expected]
    large = PsqBuilder(PsqSettings.parse("stop=large,pL=0.2"), token=token)
    # "die" is a German stopword; "the" is dropped on the target side, "data" by p_L
    assert large.sentence(["die", "datei"]) == [{"file": 1.0}]
    assert large.query([["datei"], ["liste"]]) == [{"file": 1.0}, {"list": 1.0}]
    # a token whose translations all fall below p_L (a rare identifier) translates as itself
    flat = PsqTable({"r_ok": {"(": 0.25, "file": 0.25, "mode": 0.25, "test": 0.25}})
    assert PsqBuilder(PsqSettings.parse("pL=0.3"), token=flat).sentence(["r_ok"]) == [{"r_ok": 1.0}]
    assert PsqBuilder(PsqSettings.parse("pL=0.2"), token=flat).sentence(["r_ok"]) == [
        {"(": 0.25, "file": 0.25, "mode": 0.25, "test": 0.25}]


def test_builder_interpolates_components():
    token = PsqTable({"marke": {"brand": 0.5, "mark": 0.5}})
    rules = [Rule("X", ("marke",), ("trademark",), (("EgivenF", 0.0),), ((0, 0),))]
    nbest = [SimpleNamespace(words=("brand",), score=0.0, alignment=((0, 0),))]
    settings = PsqSettings.parse("lambda=0.5:0.25:0.25")
    builder = PsqBuilder(settings, token=token, grammar=rules, translate=lambda tokens, n: nbest)
    assert builder.sentence(["marke"]) == [pytest.approx({"brand": 0.5, "mark": 0.25, "trademark": 0.25})]


def test_settings_parse_and_errors():
    settings = PsqSettings.parse("lambda=2:1:1, pL=0.01, pC=0.95, heuristic=one-to-one, stop=small, nbest=5, scale=0.5")
    assert settings.weights == {"token": 0.5, "grammar": 0.25, "nbest": 0.25}
    assert (settings.p_lower, settings.p_cumulative, settings.heuristic, settings.stopwords, settings.nbest,
            settings.scale) == (0.01, 0.95, "one-to-one", "small", 5, 0.5)
    assert PsqSettings.parse(settings.spec()) == settings
    for spec, message in [("lambda=1:1", "--psq lambda: expected 3 non-negative weights"),
                          ("pL=x", "--psq: cannot read 'pL=x'"), ("foo=1", "--psq: unknown option 'foo'"),
                          ("pC=0", "--psq pC: must be above 0"), ("pL=1", "--psq pL: must be below 1"),
                          ("heuristic=x", "--psq heuristic: expected one of one-to-one"),
                          ("lambda=0:0:0", "--psq lambda: the weights sum to 0"),
                          ("lambda=1:-1:1", "--psq lambda: must be at least 0"),
                          ("stop=huge", "--psq stop: expected one of none, small, large"),
                          ("nbest=0", "--psq nbest: must be at least 1"), ("scale=0", "--psq scale: must be above 0")]:
        with pytest.raises(ClirplugError, match=message):
            PsqSettings.parse(spec)
    with pytest.raises(ClirplugError, match="gives weight to grammar, nbest"):
        PsqBuilder(PsqSettings.parse("lambda=1:1:1"), token=PsqTable({}))


def test_builder_grammar_index_keeps_every_applicable_rule(cdec_clef06):
    rules = list(iter_grammar(cdec_clef06 / "grammars" / "grammar.1.gz"))
    tokens = ["consum", "boycott"]
    builder = PsqBuilder(PsqSettings.parse("lambda=0:1:0,heuristic=one-to-one"), grammar=rules)
    table = grammar_table(rules, tokens, "one-to-one")
    assert builder.sentence(tokens) == [pytest.approx(table.translations(t)) for t in tokens]


def test_builders_sharing_a_memo_decode_each_sentence_once():
    calls = []

    def translate(tokens, n):
        calls.append(tuple(tokens))
        return [SimpleNamespace(words=("file",), score=0.0, alignment=((0, 0),))]

    memo: dict = {}
    for spec in ("lambda=0:0:1,pL=0", "lambda=0:0:1,pL=0.5", "lambda=0:0:1,stop=large"):
        builder = PsqBuilder(PsqSettings.parse(spec), translate=translate, memo=memo)
        assert builder.query([["datei"], ["datei"]]) == [{"file": 1.0}, {"file": 1.0}]
    assert calls == [("datei",)]
    # another heuristic or n is another table
    PsqBuilder(PsqSettings.parse("lambda=0:0:1,nbest=3"), translate=translate, memo=memo).sentence(["datei"])
    assert calls == [("datei",), ("datei",)]


def test_query_sentences_split_desc_but_not_title():
    from clirplug.mt.preprocess import topic_sentences

    topic = SimpleNamespace(title="Ein Titel. Mit Punkt", desc="Erster Satz. Zweiter Satz.")
    tokenize = str.split
    assert topic_sentences(topic, "title", "de", tokenize) == [["Ein", "Titel.", "Mit", "Punkt"]]
    assert topic_sentences(topic, "desc", "de", tokenize) == [["Erster", "Satz."], ["Zweiter", "Satz."]]


def test_nbest_one_to_many_spans_lucene_stopwords():
    derivation = SimpleNamespace(words=("apply", "a", "template", "to", "round", "nearest"), score=0.0,
                                 alignment=((0, 0), (0, 2), (1, 4), (1, 5), (2, 1)))
    table = nbest_table(["vorlage", "runden", "eine"], [derivation], "one-to-many")
    assert table.translations("vorlage") == {"apply a template": 1.0}
    assert table.translations("runden") == {"round nearest": 1.0}  # adjacent targets
    derivation.alignment = ((1, 2), (1, 5))  # "template to round nearest": content words in between
    assert "runden" not in nbest_table(["vorlage", "runden"], [derivation], "one-to-many")


# -- the grammar index against grammar_table (the reference) ------------------------------------------
def _by_first_terminal(rules):
    from clirplug.mt.grammar import is_nonterminal

    index: dict = {}
    for rule in rules:
        first = next((t for t in rule.src if not is_nonterminal(t)), None)
        if first is not None:
            index.setdefault(first, []).append(rule)
    return index


def _assert_index_is_grammar_table(rules, sentences):
    from clirplug.qt.psq_tables import HEURISTICS, GrammarIndex

    index, by_first = GrammarIndex(rules), _by_first_terminal(rules)
    for heuristic in HEURISTICS:
        for tokens in sentences:
            expected = grammar_table([r for w in dict.fromkeys(tokens) for r in by_first.get(w, ())], tokens, heuristic)
            got = index.table(tokens, heuristic)
            assert got.table == expected.table  # the same floats, not approximately
            assert [list(d.items()) for d in got.table.values()] == [list(d.items()) for d in expected.table.values()]


def test_grammar_index_equals_grammar_table_on_cdec_grammars(cdec_clef06):
    for number in range(4):
        rules = list(iter_grammar(cdec_clef06 / "grammars" / f"grammar.{number}.gz"))
        words = sorted({t for rule in rules for t in rule.src if not t.startswith("[")})
        sentences = [words[:3], words[-4:], words[::2], words[1::3] * 2, list(reversed(words))]
        _assert_index_is_grammar_table(rules, sentences)


def test_grammar_index_equals_grammar_table_on_random_rules():
    import random

    rng = random.Random(17)
    vocabulary = ["a", "b", "c", "d", "e", ",", "the", "of"]
    rules = []
    for _ in range(400):
        src = [rng.choice(vocabulary) for _ in range(rng.randint(1, 4))]
        arity = rng.randint(0, min(2, len(src)))
        for k in range(1, arity + 1):
            src.insert(rng.randint(0, len(src)), f"[X,{k}]")
        tgt = [rng.choice(vocabulary) for _ in range(rng.randint(1, 4))] + [f"[X,{k}]" for k in range(arity, 0, -1)]
        links = sorted({(rng.randrange(len(src)), rng.randrange(len(tgt))) for _ in range(rng.randint(0, 5))})
        rules.append(Rule("X", tuple(src), tuple(tgt), (("EgivenF", rng.uniform(0, 3)),), tuple(links)))
    rules.sort(key=lambda rule: rule.src if rng.random() < 0.5 else ())  # runs of one source side, and scattered ones
    sentences = [[rng.choice(vocabulary) for _ in range(rng.randint(1, 8))] for _ in range(60)]
    _assert_index_is_grammar_table(rules, sentences)


def test_builder_reuses_the_nbest_list_for_every_heuristic_and_scale():
    calls = []

    def translate(tokens, n):
        calls.append((tuple(tokens), n))
        return [SimpleNamespace(words=("data", "file"), score=-1.0, alignment=((0, 0), (0, 1))),
                SimpleNamespace(words=("file",), score=-2.0, alignment=((0, 0),))]

    memo: dict = {}
    tables = {}
    for spec in ("heuristic=one-to-many", "heuristic=one-to-one", "heuristic=one-to-none,scale=2", "orphans=0.1"):
        settings = PsqSettings.parse(f"lambda=0:0:1,{spec}")
        tables[spec] = PsqBuilder(settings, translate=translate, memo=memo).query([["datei"]])
        fresh = PsqBuilder(settings, translate=lambda tokens, n: translate(tokens, n)[:], memo={})
        assert fresh.query([["datei"]]) == tables[spec]
    assert calls.count((("datei",), 10)) == 1 + 4  # once for the shared memo, once per fresh builder


def test_settings_defaults_are_pr_token_alone_without_thresholds():
    settings = PsqSettings()
    assert settings.weights == {"token": 1.0, "grammar": 0.0, "nbest": 0.0}
    assert (settings.p_lower, settings.p_cumulative, settings.heuristic, settings.stopwords, settings.nbest,
            settings.scale, settings.orphans) == (0.0, 1.0, "one-to-many", "none", 10, 1.0, 0.0)
    assert PsqSettings.parse("") == PsqSettings.read(None, "x") == PsqSettings.read({}, "x") == settings


def test_the_psq_string_and_the_yaml_mapping_give_equal_settings():
    text = "lambda=0.4:0.3:0.3,pL=0.01,pC=0.95,heuristic=one-to-one,stop=small,nbest=5,scale=0.5,orphans=0.2"
    mapping = {"lambda": [0.4, 0.3, 0.3], "pL": 0.01, "pC": 0.95, "heuristic": "one-to-one", "stop": "small",
               "nbest": 5, "scale": 0.5, "orphans": 0.2}
    python = PsqSettings(lambdas=(0.4, 0.3, 0.3), p_lower=0.01, p_cumulative=0.95, heuristic="one-to-one",
                         stopwords="small", nbest=5, scale=0.5, orphans=0.2)
    assert PsqSettings.parse(text) == PsqSettings.read(mapping, "runs.psq.psq") == PsqSettings.read(text, "x") == python
    assert PsqSettings.read({"lambda": "0:0:1", "pL": "0.1"}, "x") == PsqSettings.parse("lambda=0:0:1,pL=0.1")
    assert PsqSettings.parse(python.spec()) == python


@pytest.mark.parametrize("mapping, message", [
    ({"nbest": 0}, "runs.p.psq.nbest: must be at least 1, got 0"),
    ({"nbest": 2.5}, "runs.p.psq.nbest: expected int, got 2.5"),
    ({"pL": True}, "runs.p.psq.pL: expected float, got True"),
    ({"pC": 1.5}, "runs.p.psq.pC: must be at most 1.0, got 1.5"),
    ({"stop": "huge"}, "runs.p.psq.stop: expected one of none, small, large, got 'huge'"),
    ({"lambda": [1, 1]}, "runs.p.psq.lambda: expected 3 non-negative weights for token:grammar:nbest, got 2"),
    ({"lambda": 1}, "runs.p.psq.lambda: expected a non-empty list, got 1"),
    ({"lambda": [0, 0, 0]}, "runs.p.psq.lambda: the weights sum to 0"),
    ({"pl": 0.1}, "runs.p.psq: unknown option 'pl'"),
])
def test_a_bad_yaml_value_is_one_line_naming_its_key(mapping, message):
    with pytest.raises(ClirplugError) as error:
        PsqSettings.read(mapping, "runs.p.psq")
    assert str(error.value).startswith(message) and "\n" not in str(error.value)
