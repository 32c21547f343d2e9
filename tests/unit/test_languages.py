"""Language-aware source tokenization, normalization, sentence splitting and the shipped stopword lists.

The expected tokens were checked by hand: the Chinese words are the dictionary words of the
sentence (如何 'how', 服务器 'server', 防火墙 'firewall'), the Persian and Arabic forms are those
Lucene's Arabic/Persian normalizers and hazm's Persian normalizer give (one kaf, one yeh, no
diacritics, ASCII digits, words split at the zero-width non-joiner).
"""

import pytest

from clirplug.errors import ClirplugError
from clirplug.lucene.languages import ANALYZERS, LANGUAGES, check_language
from clirplug.mt.preprocess import normalize, preprocess, split_sentences, tokenize
from clirplug.stopwords import SHIPPED, load_stopwords, source_stopwords

pytestmark = pytest.mark.unit

ZWNJ = "\u200c"

TOKEN_CASES = [
    # Chinese: segmented into words by jieba, Latin kept whole, full-width punctuation made ASCII (NFKC)
    ("zh", "如何在服务器上配置防火墙？", ["如何", "在", "服务器", "上", "配置", "防火墙", "?"]),
    ("zh", "系统管理员用Linux系统删除文件", ["系统管理员", "用", "linux", "系统", "删除", "文件"]),
    ("zh", "ＵＳＢ设备", ["usb", "设备"]),
    # Japanese: segmented by janome
    ("ja", "ファイルを削除するコマンド。", ["ファイル", "を", "削除", "する", "コマンド", "。"]),
    # Persian: Arabic kaf and yeh in their Persian forms, diacritics dropped, ZWNJ splits, Persian digits
    ("fa", f"كتاب{ZWNJ}هاي مُفيد", ["کتاب", "های", "مفید"]),
    ("fa", f"می{ZWNJ}خواهم ۱۲۳ فايل را حذف كنم", ["می", "خواهم", "123", "فایل", "را", "حذف", "کنم"]),
    ("fa", "خانۀ ما", ["خانه", "ما"]),
    # Arabic: alef forms -> alef, alef maksura -> yeh, teh marbuta -> heh, no harakat or tatweel, digits
    ("ar", "الْكِتَابُ في المَدرسةِ", ["الكتاب", "في", "المدرسه"]),
    ("ar", "أحمد ذهب إلى آخر ٤٥ عـــربي", ["احمد", "ذهب", "الي", "اخر", "45", "عربي"]),
    ("ar", "ﻻ", ["لا"]),  # the lam-alef presentation form (NFKC)
    # Russian: lowercased words, nothing else
    ("ru", "Москва — столица России.", ["москва", "—", "столица", "россии", "."]),
    ("ru", "Удалить файл /etc/passwd?", ["удалить", "файл", "/etc/passwd", "?"]),
    # Hindi and Telugu words keep their vowel signs (combining marks)
    ("hi", "हिन्दी भाषा।", ["हिन्दी", "भाषा", "।"]),
    ("te", "తెలుగు భాష", ["తెలుగు", "భాష"]),
    # Turkish dotted and dotless I
    ("tr", "İSTANBUL ILIK", ["istanbul", "ılık"]),
]


@pytest.mark.parametrize("lang, text, tokens", TOKEN_CASES)
def test_language_tokens(lang, text, tokens):
    assert preprocess(text, lang) == tokens


def test_other_languages_are_not_normalized_or_segmented():
    assert tokenize("如何配置", "de") == ["如何配置"]  # only zh and ja are segmented
    assert normalize("كتاب", "de") == "كتاب" and normalize("كتاب", "fa") == "کتاب"
    assert preprocess("ILIK", "de") == ["ilik"]


SENTENCE_CASES = [
    ("zh", "我们使用防火墙。服务器需要配置！你好吗？好", ["我们使用防火墙。", "服务器需要配置！", "你好吗？", "好"]),
    ("ja", "ファイルを削除する。「次」です", ["ファイルを削除する。", "「次」です"]),
    ("fa", "این یک پرسش است؟ بله. تمام", ["این یک پرسش است؟", "بله.", "تمام"]),
    ("ar", "ما هذا؟ هذا كتاب.", ["ما هذا؟", "هذا كتاب."]),
    ("en", "It works. 好 no split。Here", ["It works. 好 no split。Here"]),  # cased, no CJK stops in English
]


@pytest.mark.parametrize("lang, text, sentences", SENTENCE_CASES)
def test_split_sentences_per_language(lang, text, sentences):
    assert split_sentences(text, lang) == sentences


def test_languages_are_anserinis():
    # Anserini 1.7: AnalyzerMap's 25 languages, en, and ha/so/sw/yo (WhitespaceAnalyzer)
    assert {"ar", "bn", "da", "de", "es", "fa", "fi", "fr", "hi", "hu", "id", "it", "ja", "ko", "nl", "no", "pt",
            "ru", "sv", "sw", "te", "th", "tr", "zh", "en", "pl", "uk", "ha", "so", "yo"} == set(LANGUAGES)
    assert ANALYZERS["zh"] == ANALYZERS["ko"] == "org.apache.lucene.analysis.cjk.CJKAnalyzer"
    assert check_language("fa") == "fa"
    with pytest.raises(ClirplugError, match="--language 'xx': choose one of ar, bn"):
        check_language("xx")


@pytest.mark.parametrize("path", sorted(p for p in SHIPPED.glob("*.txt") if not p.stem.startswith(("de", "en"))),
                         ids=lambda p: p.stem)
def test_shipped_lists_hold_tokens_of_their_language(path):
    words = load_stopwords(path.stem)
    assert len(words) >= 10 and path.read_text(encoding="utf-8").startswith(f"# {path.stem} stopwords: ")
    assert all(preprocess(word, path.stem) == [word] for word in words)


def test_source_stopwords():
    assert {"的", "了", "在"} <= source_stopwords("zh")
    assert {"و", "در", "به", "از", "که", "این"} <= source_stopwords("fa")  # Persian kaf and yeh, as the tokenizer writes them
    assert {"и", "в", "не"} <= source_stopwords("ru") and {"في", "من"} <= source_stopwords("ar")
    assert source_stopwords("de") == load_stopwords("de") and source_stopwords("en") == load_stopwords("en-small")
    assert source_stopwords("ko") and not source_stopwords("xx")


def test_boosting_tokenizes_queries_in_their_language():
    from clirplug.boost import query_ngrams
    from clirplug.train.boost import BoostSettings

    assert query_ngrams("用蘑菇种植叶子", 2, "zh") == ["用", "蘑菇", "种植", "叶子", "用 蘑菇", "蘑菇 种植", "种植 叶子"]
    assert BoostSettings().src_lang == "de"
    with pytest.raises(ClirplugError, match="src_lang"):
        BoostSettings.from_mapping({"src_lang": "xx"}, "runs.boost")


# sha256 of the demo's train bitext as MT tokens (one space-joined line per segment), computed with the tokenizer
# as it was before it became language-aware (commit aacbc7a): German and English output must not move
DEMO_TOKENS = {"de": "b16c4668d485f8b4cd1d1b50758c88c18f66cf6c416b521f867c25d074d657ec",
               "en": "0cc40d9217cdf3dd733bd5127fe3699be0a416bc8d70a8753216694d608cd014"}


@pytest.mark.parametrize("lang", sorted(DEMO_TOKENS))
def test_demo_bitext_tokens_are_unchanged(lang):
    import hashlib

    from clirplug.data import demo_path

    digest = hashlib.sha256()
    for line in (demo_path() / f"bitext.train.{lang}").read_text(encoding="utf-8").splitlines():
        digest.update((" ".join(preprocess(line, lang)) + "\n").encode("utf-8"))
    assert digest.hexdigest() == DEMO_TOKENS[lang]
