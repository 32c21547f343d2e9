"""Write the Chinese-English and Persian-English fixture collections tests/data/minizh and tests/data/minifa.

Run once by hand (``python tests/data/make_minilang.py``); the files are committed. Everything comes
from the hand-written dictionary below (English, Chinese, Persian for each word) and one sentence
template per language, with a fixed seed, so the script rewrites the same bytes:

- ``corpus.jsonl``: 30 English documents about a gardener, a farmer and a cook; a document's title is
  its first sentence's verb phrase ("plants the apples with the tools"), its contents four sentences;
- ``topics.jsonl``: one topic per document, its title and first two sentences translated (title, desc);
  every other Persian topic is written with the Arabic yeh and kaf (ي, ك), as Persian typed on an
  Arabic keyboard often is, while the bitext has the Persian letters (ی, ک);
- ``qrels.txt``: relevance 2 for the translated document, 1 for the other documents whose title
  has the same verb and object;
- ``bitext.train.<lang>``, ``bitext.train.en``: 300 template sentence pairs drawn independently of
  the documents (the translation model never sees the topics).
"""

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 11
ZWNJ = "\u200c"

SUBJECTS = {  # English: (Chinese, Persian)
    "gardener": ("园丁", "باغبان"),
    "farmer": ("农民", "کشاورز"),
    "cook": ("厨师", "آشپز"),
}
VERBS = {  # English 3rd person: (Chinese, Persian present 3rd person, written with ZWNJ after می)
    "plants": ("种植", f"می{ZWNJ}کارد"),
    "washes": ("清洗", f"می{ZWNJ}شوید"),
    "buys": ("购买", f"می{ZWNJ}خرد"),
    "sells": ("出售", f"می{ZWNJ}فروشد"),
    "collects": ("收集", f"جمع می{ZWNJ}کند"),
    "cooks": ("烹饪", f"می{ZWNJ}پزد"),
}
NOUNS = {  # English plural: (Chinese, Persian plural)
    "apples": ("苹果", f"سیب{ZWNJ}ها"),
    "trees": ("树木", "درختان"),
    "flowers": ("鲜花", f"گل{ZWNJ}ها"),
    "seeds": ("种子", "بذرها"),
    "leaves": ("叶子", f"برگ{ZWNJ}ها"),
    "vegetables": ("蔬菜", "سبزیجات"),
    "bees": ("蜜蜂", "زنبورها"),
    "tools": ("工具", "ابزارها"),
    "grapes": ("葡萄", "انگورها"),
    "carrots": ("胡萝卜", f"هویج{ZWNJ}ها"),
    "mushrooms": ("蘑菇", f"قارچ{ZWNJ}ها"),
    "onions": ("洋葱", "پیازها"),
    "baskets": ("篮子", f"سبد{ZWNJ}ها"),
    "buckets": ("水桶", f"سطل{ZWNJ}ها"),
}
PLACES = {  # English: (Chinese, Persian)
    "greenhouse": ("温室", "گلخانه"),
    "yard": ("院子", "حیاط"),
    "kitchen": ("厨房", "آشپزخانه"),
    "market": ("市场", "بازار"),
}
LANGS = {"zh": 0, "fa": 1}  # index into the dictionary tuples
ARABIC_KEYBOARD = str.maketrans("یک", "يك")  # Persian yeh and kaf as Arabic letters


def sentence(subject, verb, obj, instrument, place, lang):
    """One template sentence in ``lang`` (``en``, ``zh``, ``fa``)."""
    if lang == "en":
        return f"The {subject} {verb} the {obj} with the {instrument} in the {place}."
    k = LANGS[lang]
    s, v, o, i, p = (SUBJECTS[subject][k], VERBS[verb][k], NOUNS[obj][k], NOUNS[instrument][k], PLACES[place][k])
    if lang == "zh":  # subject, place, 用 + instrument, verb, object
        return f"{s}在{p}里用{i}{v}{o}。"
    return f"{s} در {p} {o} را با {i} {v}."  # Persian: SOV, object marked by را


def title(verb, obj, instrument, lang):
    """A topic or document title: the verb phrase of the first sentence."""
    if lang == "en":
        return f"{verb} the {obj} with the {instrument}"
    k = LANGS[lang]
    v, o, i = VERBS[verb][k], NOUNS[obj][k], NOUNS[instrument][k]
    return f"用{i}{v}{o}" if lang == "zh" else f"{o} را با {i} {v}"


def draw(rng):
    """A random (subject, verb, object, instrument, place), object and instrument different."""
    obj, instrument = rng.sample(sorted(NOUNS), 2)
    return rng.choice(sorted(SUBJECTS)), rng.choice(sorted(VERBS)), obj, instrument, rng.choice(sorted(PLACES))


def main():
    rng = random.Random(SEED)
    docs, seen = [], set()
    while len(docs) < 30:
        first = draw(rng)
        verb, obj, instrument = first[1:4]
        if (verb, obj, instrument) in seen:
            continue
        seen.add((verb, obj, instrument))
        # the next sentences keep the verb or the object, as a page stays on its topic
        rest = []
        for _ in range(3):
            s, v, o, i, p = draw(rng)
            rest.append((s, verb if rng.random() < 0.5 else v, obj, i if i != obj else instrument, p))
        docs.append((f"doc{len(docs):02d}", [first, *rest]))
    pairs = []
    for _ in range(300):
        parts = draw(rng)
        pairs.append(parts)
    for lang in LANGS:
        folder = HERE / f"mini{lang}"
        folder.mkdir(exist_ok=True)
        corpus, topics, qrels = [], [], []
        for doc_id, sentences in docs:
            verb, obj, instrument = sentences[0][1:4]
            text = " ".join(sentence(*parts, "en") for parts in sentences)
            corpus.append({"id": doc_id, "title": title(verb, obj, instrument, "en"), "contents": text})
            desc = "".join if lang == "zh" else " ".join
            topic = {"id": f"q{doc_id[3:]}", "title": title(verb, obj, instrument, lang),
                     "desc": desc(sentence(*parts, lang) for parts in sentences[:2]), "lang": lang}
            if lang == "fa" and int(doc_id[3:]) % 2:  # typed with an Arabic keyboard: Arabic yeh and kaf
                topic.update({key: topic[key].translate(ARABIC_KEYBOARD) for key in ("title", "desc")})
            topics.append(topic)
            qrels.append(f"q{doc_id[3:]} 0 {doc_id} 2")
            qrels.extend(f"q{doc_id[3:]} 0 {other} 1" for other, others in docs
                         if other != doc_id and others[0][1:3] == (verb, obj))
        write = lambda name, lines: (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")  # noqa: E731
        write("corpus.jsonl", [json.dumps(doc, ensure_ascii=False) for doc in corpus])
        write("topics.jsonl", [json.dumps(topic, ensure_ascii=False) for topic in topics])
        write("qrels.txt", qrels)
        write(f"bitext.train.{lang}", [sentence(*parts, lang) for parts in pairs])
        write("bitext.train.en", [sentence(*parts, "en") for parts in pairs])


if __name__ == "__main__":
    main()
