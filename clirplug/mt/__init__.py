"""Machine translation for query translation: alignment, grammars, language model, decoding."""

KINDS = ("hiero", "flat")  # the grammars of a model: hierarchical rules or flat phrase pairs (docs/models.md)
