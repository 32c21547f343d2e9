"""Write the shipped source-language stopword lists (``<lang>.txt`` beside this file) from their sources.

Run once by hand; the lists are committed. Sources: Lucene's own stop sets in Anserini's fat jar
(Apache Lucene 9, the Snowball lists under the BSD license, Jacques Savoy's lists under the BSD
license, the others as their headers say) and, for the languages Lucene has none for in that jar,
stopwords-iso (MIT, the JSON of the ``stopwordsiso`` wheel). Each entry is put through
:func:`clirplug.mt.preprocess.preprocess` of its language, so a list holds the tokens the tokenizer
produces (normalized Arabic and Persian letters, lowercase); an entry it would cut into several
tokens (a Chinese phrase, a Persian word with a zero-width non-joiner) could never match a token
and is left out. ``de`` (the compound splitter's list) and ``en-small``/``en-large`` are kept as
they are.

    python clirplug/data/stopwords/make_stopwords.py ANSERINI_FATJAR STOPWORDS_ISO_JSON
"""

import json
import sys
import zipfile
from pathlib import Path

from clirplug.lucene.languages import LANGUAGES
from clirplug.mt.preprocess import preprocess

LUCENE = "org/apache/lucene/analysis/"
SNOWBALL = {"da": "danish", "es": "spanish", "fi": "finnish", "fr": "french", "hu": "hungarian", "it": "italian",
            "nl": "dutch", "no": "norwegian", "pt": "portuguese", "ru": "russian", "sv": "swedish"}
OWN = ("ar", "bn", "fa", "hi", "id", "ja", "te", "th", "tr", "uk")  # org/apache/lucene/analysis/<lang>/stopwords.txt
KEPT = ("de", "en")


def lucene_words(jar: zipfile.ZipFile, lang: str) -> tuple[str, list[str]]:
    """(source, entries) of Lucene's list for ``lang``: Snowball format (``|`` comments) or one word a line (``#``)."""
    if lang in SNOWBALL:
        name = f"{LUCENE}snowball/{SNOWBALL[lang]}_stop.txt"
        lines = jar.read(name).decode("utf-8").splitlines()
        return name, [word for line in lines for word in line.split("|", 1)[0].split()]
    name = f"{LUCENE}{lang}/stopwords.txt"
    lines = jar.read(name).decode("utf-8").splitlines()
    return name, [line.split("#", 1)[0].strip() for line in lines]


def main(jar_path: str, iso_path: str) -> None:
    iso = json.loads(Path(iso_path).read_text(encoding="utf-8"))
    with zipfile.ZipFile(jar_path) as jar:
        for lang in LANGUAGES:
            if lang in KEPT:
                continue
            if lang in SNOWBALL or lang in OWN:
                name, entries = lucene_words(jar, lang)
                source = f"Apache Lucene 9 (Anserini 1.7 fat jar), {name}; license: see that file's header in Lucene"
            elif lang in iso:
                entries = iso[lang]
                source = "stopwords-iso 0.7.1 (https://github.com/stopwords-iso), MIT license"
            else:
                continue
            words = []
            for entry in entries:
                tokens = preprocess(entry, lang) if entry else []
                if len(tokens) == 1 and any(c.isalnum() for c in tokens[0]) and tokens[0] not in words:
                    words.append(tokens[0])
            header = (f"# {lang} stopwords: {source}.\n# Entries normalized by clirplug.mt.preprocess.preprocess "
                      f"(make_stopwords.py); {len(words)} words.\n")
            (Path(__file__).parent / f"{lang}.txt").write_text(header + "\n".join(words) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
