"""Machine translation for query translation: alignment, grammars, language model, decoding."""
