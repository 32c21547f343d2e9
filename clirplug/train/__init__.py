"""Training steps: files in, a model (folder or file) out.

One module per step, each with its settings class and a ``train_*`` function that
``clirplug train <step>``, the experiment runner and Python code all call:
:mod:`~clirplug.train.align`, :mod:`~clirplug.train.grammar`, :mod:`~clirplug.train.lm`,
:mod:`~clirplug.train.weights`, :mod:`~clirplug.train.boost`, :mod:`~clirplug.train.bowfd`,
:mod:`~clirplug.train.mira`. The steps writing into a model folder record what they did in
``DIR/stages/`` (:mod:`~clirplug.train.cache`) and are skipped when nothing changed.
"""
