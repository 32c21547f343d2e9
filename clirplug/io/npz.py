"""numpy ``.npy``/``.npz`` files read with one-line errors: a truncated or foreign file is named, not a traceback."""

import zipfile
import zlib

from clirplug.errors import ClirplugError

# What numpy raises for a missing, truncated, foreign or pickled file.
READ_ERRORS = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error)


def read_arrays(path, what: str = "arrays"):
    """The array of a ``.npy`` file, or the arrays of an ``.npz`` file as a dict (all loaded).

    Raises
    ------
    ClirplugError
        ``path: cannot read the <what> (...)`` when the file is missing, truncated or not numpy's.
    """
    import numpy as np

    try:
        data = np.load(path, allow_pickle=False)
        if isinstance(data, np.ndarray):
            return data
        with data:
            return {name: data[name] for name in data.files}
    except READ_ERRORS as error:
        detail = " ".join(str(error).split()) or type(error).__name__
        raise ClirplugError(f"{path}: cannot read the {what} ({detail}; truncated or not a numpy file?)") from error
