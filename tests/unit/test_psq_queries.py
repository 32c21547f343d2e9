"""PsqQueries: the PSQ tables of a model loaded once give, call after call, the distributions of tables read afresh
for each call, and each call reads its n-best lists from the translator again."""

import pytest

from clirplug.api import PsqSearcher, TranslationModel
from clirplug.io.topics import Topic
from clirplug.mt.grammar import SourcePhrases, parse_rule, read_grammar, write_grammar
from clirplug.mt.lexicon import LexicalTable
from clirplug.mt.lm import FALLBACK_DISCOUNTS, estimate, write_arpa
from clirplug.mt.preprocess import preprocessor, topic_sentences
from clirplug.mt.translator import Translator
from clirplug.qt.psq import PsqQueries, PsqSource, psq_queries
from clirplug.qt.psq_tables import GrammarIndex, PsqBuilder, PsqSettings, PsqTable

pytestmark = pytest.mark.unit

GRAMMAR = """\
[X] ||| dateien ||| files ||| EgivenF=0.1 FgivenE=0.2 ||| 0-0
[X] ||| dateien ||| data ||| EgivenF=0.6 FgivenE=0.5 ||| 0-0
[X] ||| kopieren ||| copy ||| EgivenF=0.2 FgivenE=0.2 ||| 0-0
[X] ||| kopieren ||| duplicate ||| EgivenF=0.7 FgivenE=0.4 ||| 0-0
[X] ||| verschieben ||| move ||| EgivenF=0.1 FgivenE=0.1 ||| 0-0
[X] ||| verzeichnis ||| directory ||| EgivenF=0.3 FgivenE=0.2 ||| 0-0
[X] ||| verzeichnis ||| folder ||| EgivenF=0.2 FgivenE=0.3 ||| 0-0
[X] ||| in ||| into ||| EgivenF=0.3 FgivenE=0.3 ||| 0-0
[X] ||| in ||| in the ||| EgivenF=0.4 FgivenE=0.3 ||| 0-0
[X] ||| dateien [X,1] ||| [X,1] files ||| EgivenF=0.3 FgivenE=0.3 ||| 0-1
[X] ||| [X,1] in [X,2] ||| [X,1] into a [X,2] ||| EgivenF=0.5 FgivenE=0.4 ||| 1-1
"""
LM_TEXT = ["copy files into a directory", "move files into a folder", "the data in the folder", "files"]
TOPICS = [Topic("a", "dateien kopieren", "Dateien kopieren. Verzeichnis verschieben.", ""),
          Topic("b", "verzeichnis", "dateien in verzeichnis verschieben", ""),
          Topic("c", "dateien in verzeichnis", "Kopieren, verschieben. In Dateien!", ""),
          Topic("a2", "dateien kopieren", "Dateien kopieren. Verzeichnis verschieben.", "")]
SETTINGS = ["lambda=1:0:0", "lambda=0:1:0,heuristic=one-to-one", "lambda=0:0:1,nbest=3,scale=2,orphans=0.2",
            "lambda=0.4:0.3:0.3,nbest=3,stop=large,pL=0.05,pC=0.9"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    write_grammar([parse_rule(line) for line in GRAMMAR.splitlines()], folder / "grammar.hiero.gz")
    write_arpa(estimate([s.split() for s in LM_TEXT], order=3, discount_fallback=FALLBACK_DISCOUNTS), folder / "lm.arpa")
    LexicalTable.from_entries([("dateien", "files", 0.7), ("dateien", "data", 0.3), ("kopieren", "copy", 1.0),
                               ("verzeichnis", "directory", 0.6), ("verzeichnis", "folder", 0.4)]).save(
        folder / "lex.e_given_f.npz")
    return folder


def _afresh(model, settings, field, topics):
    """The distributions of ``topics`` from tables and a decoder all read for this call alone."""
    tokenize = preprocessor("de", model)
    sentences = [tokens for topic in topics for tokens in topic_sentences(topic, field, "de", tokenize)]
    rules = read_grammar(model / "grammar.hiero.gz", SourcePhrases(sentences))
    translator = Translator(model, kind="hiero", cache=False)
    translator.restrict(sentences)
    builder = PsqBuilder(settings, LexicalTable.load(model / "lex.e_given_f.npz"), GrammarIndex(rules),
                         translator.translate)
    source = PsqSource(model=str(model), field=field, kind="hiero")
    return psq_queries(source, topics, builder, tokenize)


@pytest.mark.parametrize("spec", SETTINGS)
@pytest.mark.parametrize("field", ["title", "desc"])
def test_kept_tables_give_each_call_the_distributions_of_fresh_ones(model, spec, field):
    settings = PsqSettings.parse(spec)
    source = PsqSource(model=str(model), field=field, kind="hiero")
    kept = PsqQueries(source, settings, Translator(model, kind="hiero", cache=False))
    for topic in TOPICS:  # one query at a time, as a searcher answers them
        assert kept.queries([topic]) == _afresh(model, settings, field, [topic])
    assert kept.queries(TOPICS) == _afresh(model, settings, field, TOPICS)
    default = PsqQueries(source, settings)  # its own translator: the folder's weights and cache
    assert default.queries(TOPICS) == kept.queries(TOPICS)


def test_each_call_reads_its_nbest_lists_again(model):
    settings = PsqSettings.parse("lambda=0:0:1,nbest=3")
    translator = Translator(model, kind="hiero", cache=False)
    asked = []
    translate = translator.translate
    translator.translate = lambda tokens, n: asked.append(tuple(tokens)) or translate(tokens, n)
    kept = PsqQueries(PsqSource(model=str(model), field="title", kind="hiero"), settings, translator)
    first = kept.queries([TOPICS[0]])
    assert kept.queries([TOPICS[0]]) == first
    assert asked == [("dateien", "kopieren")] * 2  # no memo outlives a call: as DT, only the translator's cache


def test_a_table_file_is_read_once(tmp_path, monkeypatch):
    path = tmp_path / "table.tsv"
    PsqTable({"dateien": {"files": 0.8, "data": 0.2}}).save(path)
    reads = []
    load = PsqTable.load
    monkeypatch.setattr(PsqTable, "load", classmethod(lambda cls, p: reads.append(p) or load(p)))
    kept = PsqQueries(PsqSource(table=str(path)), PsqSettings())
    assert kept.queries(TOPICS[:1]) == {"a": [{"files": 0.8, "data": 0.2}, {"kopieren": 1.0}]}
    assert kept.queries(TOPICS[1:2]) == {"b": [{"verzeichnis": 1.0}]}
    assert reads == [str(path)]


def test_the_searcher_decodes_with_its_models_translator(model):
    translation_model = TranslationModel(model, cache=False)
    searcher = PsqSearcher("no-index-opened", translation_model, "lambda=0:0:1,nbest=3", field="desc")
    assert searcher.tables.translator is translation_model.translator
    assert searcher.tables.queries(TOPICS) == _afresh(model, searcher.settings, "desc", TOPICS)
    other = PsqSearcher("no-index-opened", translation_model, "lambda=0:0:1,nbest=3", src_lang="fr")
    assert other.tables.translator is not translation_model.translator
