"""N-gram language model: interpolated modified Kneser-Ney estimation, ARPA output, kenlm queries.

Estimation follows Chen & Goodman (1998, §3, eq. 17) as in KenLM's ``lmplz`` (Heafield et
al. 2013): adjusted counts ``a`` (raw counts at the highest order and for n-grams starting
with ``<s>``, otherwise the number of distinct left extensions), three discounts per order
from the count-of-counts ``t_k`` of ``a``,

    Y = t_1 / (t_1 + 2 t_2),     D_n(k) = k - (k + 1) Y t_{k+1} / t_k     (k = 1, 2, 3+),

and interpolation down to the uniform distribution over the vocabulary:

    p(w | h) = (a(h w) - D_n(a(h w))) / Σ_x a(h x)  +  γ(h) p(w | h'),
    γ(h)     = (D_n(1) N_1(h ·) + D_n(2) N_2(h ·) + D_n(3) N_3+(h ·)) / Σ_x a(h x),

where ``h'`` drops the first word of ``h``. The unigram level interpolates with ``1 / |V|``
over the words that can be predicted: every word seen, ``</s>`` and ``<unk>`` (not ``<s>``,
whose probability is 0, written as -99 in ARPA as KenLM does). So ``Σ_w p(w | h) = 1`` over
that vocabulary for every context ``h``. The ARPA file stores ``log10 p(w | h)`` for every
n-gram seen and ``log10 γ(h)`` as its backoff weight, which is exactly how kenlm computes
``p(w | h)`` for an unseen ``h w``.

Counting is vectorized: each n-gram is encoded as ``index of its (n-1)-gram prefix × |V| +
last word`` and counted with ``np.unique``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clirplug.atomic import atomic_open
from clirplug.errors import ClirplugError

BOS, EOS, UNK = "<s>", "</s>", "<unk>"
NO_PROBABILITY = -99.0  # log10 p(<s>), as in KenLM's ARPA files
FALLBACK_DISCOUNTS = (0.5, 1.0, 1.5)  # KenLM's --discount_fallback defaults


@dataclass
class NGramModel:
    """An estimated back-off n-gram model, one set of arrays per order ``n = 1..order``.

    Attributes
    ----------
    vocabulary : list of str
        Word of each id; sorted, so the model does not depend on the input order.
    prefix : list of ndarray
        ``prefix[n - 1][i]``: the row, at order ``n - 1``, of the first ``n - 1`` words of the
        ``i``-th n-gram (empty at order 1). Rows are sorted by ``(prefix, word)``.
    word : list of ndarray
        The last word id of each n-gram.
    log10_prob : list of ndarray
        ``log10 p(w_n | w_1 .. w_{n-1})`` of each row.
    log10_backoff : list of ndarray
        ``log10 γ(w_1 .. w_n)`` of each row when it is a context of an (n+1)-gram, else ``nan``
        (absent from ARPA, read as 0); empty at the highest order.
    discounts : list of tuple of float
        ``(D_n(1), D_n(2), D_n(3+))`` per order.
    """

    vocabulary: list[str]
    prefix: list[np.ndarray]
    word: list[np.ndarray]
    log10_prob: list[np.ndarray]
    log10_backoff: list[np.ndarray]
    discounts: list[tuple[float, float, float]]

    @property
    def order(self) -> int:
        return len(self.word)

    def texts(self, n: int, shorter: list | None = None) -> list:
        """The n-grams of order ``n`` as word tuples, given those of order ``n - 1`` (``shorter``)."""
        words = [(w,) for w in self.vocabulary]
        if n == 1:
            return [words[w] for w in self.word[0].tolist()]
        return [shorter[p] + words[w] for p, w in zip(self.prefix[n - 1].tolist(), self.word[n - 1].tolist())]


def modified_kn_discounts(adjusted_counts: np.ndarray, order: int, fallback=None) -> tuple[float, float, float]:
    """``(D(1), D(2), D(3+))`` from the count-of-counts (Chen & Goodman 1998, eq. 26).

    Raises ``ClirplugError`` when a count-of-count is zero or a discount falls outside
    ``[0, k]`` (corpora too small or too uniform), unless ``fallback`` discounts are given.
    """
    t = [int(np.count_nonzero(adjusted_counts == k)) for k in range(1, 5)]
    if min(t) > 0:
        y = t[0] / (t[0] + 2 * t[1])
        discounts = tuple(k - (k + 1) * y * t[k] / t[k - 1] for k in (1, 2, 3))
        if all(0.0 <= d <= k for k, d in zip((1, 2, 3), discounts)):
            return discounts
    if fallback is not None:
        return tuple(float(d) for d in fallback)
    raise ClirplugError(
        f"cannot estimate Kneser-Ney discounts for order {order}: counts-of-counts t1..t4 = {t} "
        "(the text is too small; use the discount fallback)"
    )


def _encode(sentences: Iterable[list[str]]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Word ids of ``<s> w1 .. wn </s>`` for every sentence, and each token's offset in its sentence."""
    ids: dict[str, int] = {BOS: 0, EOS: 1, UNK: 2}
    stream: list[int] = []
    offsets: list[int] = []
    for tokens in sentences:
        if not tokens:
            continue
        stream.append(0)
        for token in tokens:
            index = ids.get(token)
            if index is None:
                index = ids[token] = len(ids)
            stream.append(index)
        stream.append(1)
        offsets.extend(range(len(tokens) + 2))
    words = list(ids)
    if not stream:
        raise ClirplugError("no text to estimate a language model from")
    rank = np.empty(len(words), dtype=np.int64)
    rank[np.array(sorted(range(len(words)), key=words.__getitem__))] = np.arange(len(words))
    return sorted(words), rank[np.array(stream, dtype=np.int64)], np.array(offsets, dtype=np.int64)


def estimate(sentences: Iterable[list[str]], order: int = 4, discount_fallback=None) -> NGramModel:
    """Estimate an interpolated modified Kneser-Ney model (see the module docstring).

    Parameters
    ----------
    sentences
        Token lists, one per sentence; ``<s>`` and ``</s>`` are added.
    order
        The n-gram order (4 in the BOW-FD paper's setup).
    discount_fallback
        ``(D1, D2, D3+)`` used for an order whose discounts cannot be estimated (e.g.
        :data:`FALLBACK_DISCOUNTS`); ``None`` raises instead.
    """
    if order < 1:
        raise ClirplugError(f"the order must be at least 1, got {order}")
    vocabulary, stream, offset = _encode(sentences)
    size = len(vocabulary)
    bos = vocabulary.index(BOS)

    # n-gram tables: index of the n-gram ending at each position (-1 where there is none)
    index_at = [stream]
    contexts, lasts, suffixes, raw, first = [None], [np.arange(size)], [None], [np.bincount(stream, minlength=size)], [np.arange(size)]
    for n in range(2, order + 1):
        positions = np.flatnonzero(offset >= n - 1)
        keys = index_at[-1][positions - 1] * size + stream[positions]
        unique, first_seen, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
        at = np.full(len(stream), -1, dtype=np.int64)
        at[positions] = inverse
        index_at.append(at)
        contexts.append(unique // size)
        lasts.append(unique % size)
        suffixes.append(index_at[-2][positions[first_seen]])
        raw.append(counts)
        first.append(first[-1][unique // size])

    # adjusted counts: raw at the top order and for n-grams starting with <s>, else continuation counts
    adjusted = []
    for n in range(1, order + 1):
        if n == order:
            counts = raw[n - 1].copy()
        else:
            counts = np.bincount(suffixes[n], minlength=len(raw[n - 1]))
            counts = np.where(first[n - 1] == bos, raw[n - 1], counts)
        if n == 1:
            counts[bos] = 0  # <s> is never predicted
        adjusted.append(counts)

    discounts = [modified_kn_discounts(adjusted[n - 1], n, discount_fallback) for n in range(1, order + 1)]

    probs: list[np.ndarray] = []
    gammas: list[np.ndarray] = []  # gammas[n - 1][h]: γ of each (n-1)-gram context h at order n
    for n in range(1, order + 1):
        a = adjusted[n - 1]
        d1, d2, d3 = discounts[n - 1]
        discount = np.select([a >= 3, a == 2, a == 1], [d3, d2, d1], 0.0)
        groups = contexts[n - 1] if n > 1 else np.zeros(len(a), dtype=np.int64)
        n_contexts = len(raw[n - 2]) if n > 1 else 1
        total = np.bincount(groups, weights=a, minlength=n_contexts).astype(float)
        mass = np.bincount(groups, weights=discount * (a > 0), minlength=n_contexts)
        gamma = np.divide(mass, total, out=np.zeros(n_contexts), where=total > 0)
        safe_total = np.where(total > 0, total, 1.0)
        p = np.maximum(a - discount, 0.0) / safe_total[groups]
        if n == 1:
            p = p + gamma[0] / (size - 1)  # uniform over the vocabulary without <s>
            p[bos] = 0.0
        else:
            p = p + gamma[groups] * probs[-1][suffixes[n - 1]]
        probs.append(p)
        gammas.append(np.where(total > 0, gamma, np.nan))

    prefixes = [np.empty(0, dtype=np.int64)] + contexts[1:]
    with np.errstate(divide="ignore"):
        log_probs = [np.log10(p) for p in probs]
        log_probs[0][bos] = NO_PROBABILITY
        backoffs = [np.log10(gammas[n]) for n in range(1, order)] + [np.empty(0)]
    return NGramModel(vocabulary, prefixes, lasts, log_probs, backoffs, discounts)


def write_arpa(model: NGramModel, path) -> None:
    """Write ``model`` as an ARPA file (atomically), values with 7 decimals."""
    with atomic_open(path, "w") as out:
        out.write("\\data\\\n")
        for n, words in enumerate(model.word, 1):
            out.write(f"ngram {n}={len(words)}\n")
        grams = None
        for n in range(1, model.order + 1):
            grams = model.texts(n, grams)
            texts = [" ".join(gram) for gram in grams]
            out.write(f"\n\\{n}-grams:\n")
            probs = np.char.mod("%.7f", model.log10_prob[n - 1]).tolist()
            if n < model.order:
                backoff = model.log10_backoff[n - 1]
                tails = np.where(np.isnan(backoff), "", np.char.add("\t", np.char.mod("%.7f", np.nan_to_num(backoff)))).tolist()
            else:
                tails = [""] * len(texts)
            out.writelines(f"{p}\t{t}{b}\n" for p, t, b in zip(probs, texts, tails))
        out.write("\n\\end\\\n")


class LanguageModel:
    """clirplug's one wrapper of ``kenlm.Model`` (an ARPA or kenlm binary file): log10 scores of
    token sequences and incremental states, for the decoder (:mod:`clirplug.mt.decoder`) and
    everything else that queries an n-gram LM.

    States are kenlm's own (hashable, comparable), as hypothesis recombination needs.
    """

    def __init__(self, path):
        import kenlm

        self.path = Path(path)
        if not self.path.is_file():
            raise ClirplugError(f"{self.path}: no such language model file")
        config = kenlm.Config()  # silent: no "faster if you build a binary file", no star bar
        config.show_progress, config.arpa_complain = False, kenlm.ARPALoadComplain.NONE
        try:
            self.model = kenlm.Model(str(self.path), config)
        except (OSError, RuntimeError) as error:
            raise ClirplugError(f"{self.path}: cannot load the language model: {error}") from error
        self._state_type = kenlm.State

    @property
    def order(self) -> int:
        return self.model.order

    def __contains__(self, word: str) -> bool:
        return word in self.model

    def score(self, tokens: Sequence[str], bos: bool = True, eos: bool = True) -> float:
        """``log10 p(tokens)``, with ``<s>``/``</s>`` context when ``bos``/``eos``."""
        return self.model.score(" ".join(tokens), bos=bos, eos=eos)

    def begin_state(self):
        """The state after ``<s>``."""
        state = self._state_type()
        self.model.BeginSentenceWrite(state)
        return state

    def null_state(self):
        """The empty-context state."""
        state = self._state_type()
        self.model.NullContextWrite(state)
        return state

    def advance(self, state, word: str):
        """``(log10 p(word | state), next state)``."""
        following = self._state_type()
        return self.model.BaseScore(state, word, following), following

    def perplexity(self, sentences: Iterable[list[str]]) -> float:
        """``10^(-Σ log10 p / N)`` over the sentences, ``N`` counting every token and each ``</s>``."""
        total, count = 0.0, 0
        for tokens in sentences:
            total += self.score(tokens)
            count += len(tokens) + 1
        if count == 0:
            raise ClirplugError("no sentences to compute a perplexity on")
        return 10.0 ** (-total / count)
