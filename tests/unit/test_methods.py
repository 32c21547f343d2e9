"""The registry of methods (clirplug.methods): each entry's library function exists and takes its settings, and
its searcher is a searcher of the Python API taking what the entry says it needs."""

import dataclasses
import inspect
import typing

import pytest

from clirplug.methods import METHODS, NEEDS, RUNS, TRAINING

pytestmark = pytest.mark.cli  # reads the rerank command's methods
# Where each setting of a method reaches its library function: the parameter of that name, another
# parameter (psq's psq is the settings= PsqSettings, its kind the kind of source=, a PsqSource;
# fusion's fuser is method=), or None for what only an experiment reads: the tuning grids and measure (and the
# learned fusion's learning settings),
# and dt's weights, which choose the decoder weights file of the experiment's translate stage.
PARAMETERS = {
    "bm25": {"k1": "k1", "b": "b"},
    "dt": {"kind": "kind", "weights": None, "prf": "prf", "fb_terms": "fb_terms", "fb_docs": "fb_docs",
           "original_query_weight": "original_query_weight", "grid": None},
    "dt-mira": {"kind": "kind"},
    "psq": {"psq": "settings", "kind": "source.kind", "grid": None},
    "boost": {"candidates": "candidates"},
    "bowfd": {"candidates": "candidates", "kind": "kind", "lm": "lm", "depth": "depth"},
    "fusion": {"runs": "runs", "fuser": "method", "grid_step": None, "measure": None, "grid": None, "pairs": None,
               "seed": None, "folds": None, "min_gain": None},
    "dense": {"encoder": "encoder", "words": "words", "grid": None, "search": "search", "m": "m",
              "ef_construction": "ef_construction", "ef_search": "ef_search", "query": "query", "kind": "kind"},
}
# the parameters taking a library settings object, and its class
SETTINGS_PARAMETERS = {("psq", "settings"): "PsqSettings", ("bowfd", "config"): "BowfdConfig"}


def _hints(function) -> dict:
    return typing.get_type_hints(function)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_s_function_imports_and_takes_each_of_its_settings(method):
    entry = METHODS[method]
    function = entry.function()
    assert callable(function) and entry.library == f"{function.__module__}:{function.__name__}"
    parameters = inspect.signature(function).parameters
    assert set(PARAMETERS[method]) == set(entry.settings.names())
    for setting, parameter in PARAMETERS[method].items():
        if parameter is None:
            continue
        name, _, attribute = parameter.partition(".")
        assert name in parameters, (method, setting, parameter)
        if attribute:
            owner = typing.get_args(_hints(function)[name]) or (_hints(function)[name],)
            assert any(attribute in {f.name for f in dataclasses.fields(cls)} for cls in owner), (method, parameter)
    for (owner, name), cls in SETTINGS_PARAMETERS.items():
        if owner == method:
            assert cls in str(_hints(function)[name]), (method, name)


@pytest.mark.parametrize("method", sorted(name for name, entry in RUNS.items() if entry.training is not None))
def test_a_trained_method_s_training_step_is_the_one_of_clirplug_train(method):
    assert any(RUNS[method].training is step for step in TRAINING.values())


@pytest.mark.parametrize("step", sorted(TRAINING))
def test_each_training_function_takes_its_settings_class(step):
    entry = TRAINING[step]
    assert _hints(entry.train)["settings"] is entry.settings
    assert isinstance(inspect.signature(entry.train).parameters["settings"].default, entry.settings)


def test_the_rerank_command_s_methods_are_rerankers_of_candidates():
    from clirplug.cli.rerank import rerankers

    for method in rerankers():
        assert list(inspect.signature(RUNS[method].function()).parameters)[:2] == ["topics", "candidates"], method


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_s_searcher_is_an_api_searcher_taking_what_it_needs(method):
    from clirplug import api

    entry = METHODS[method]
    cls = entry.searcher_class()
    assert issubclass(cls, api.Searcher) and entry.searcher == f"clirplug.api:{cls.__name__}"
    assert issubclass(cls, api.Reranker) == entry.reranks
    parameters = inspect.signature(cls).parameters
    assert set(entry.needs) <= set(NEEDS) and set(entry.needs) <= set(parameters), method
    assert ("first_stage" in parameters) == entry.reranks  # a reranker takes a first stage, needed or not


def test_one_table_holds_every_method_and_runs_those_of_experiments():
    assert list(RUNS) == [name for name, entry in METHODS.items() if entry.experiment]
    assert set(METHODS) - set(RUNS) == {"bm25"}
    assert all(entry.help and len(entry.help) < 70 for entry in METHODS.values())


def test_bowfd_s_default_depth_is_one_definition():
    """The experiment's entry, the training, the searcher (the API, the service, PyTerrier) and the library function
    (``clirplug rerank``, whose ``--depth`` and ``serve``'s default to the method's own) rerank the same depth."""
    from clirplug import api
    from clirplug.cli import build_parser
    from clirplug.rerank import bowfd
    from clirplug.rerank.config import DEFAULT_DEPTH
    from clirplug.train.bowfd import BowfdSettings

    assert METHODS["bowfd"].settings().depth == BowfdSettings().depth == DEFAULT_DEPTH
    for function in (api.BowfdSearcher, bowfd.rerank_run):
        assert inspect.signature(function).parameters["depth"].default == DEFAULT_DEPTH
    for command in (["rerank", "--method", "bowfd", "--model", "m", "--topics", "t", "--output", "r"], ["serve"]):
        assert build_parser().parse_args(command).depth is None


def test_the_experiment_s_models_are_trained_by_the_steps_of_clirplug_train():
    """``models:`` names steps of the one table of training steps, and the arguments the experiment builds for each
    are parameters of that step's function (the function of ``clirplug train``, files in, model out)."""
    from clirplug.data import demo_config
    from clirplug.experiment.config import load_config
    from clirplug.experiment.plan import MODEL_ARGUMENTS

    config = load_config(demo_config())
    for name, arguments in MODEL_ARGUMENTS.items():
        step = TRAINING[name]
        built, _, _ = arguments(config, config.root / "src", config.root / "tgt", "flat", config.model_dir)
        assert set(built) <= set(inspect.signature(step.train).parameters) - {"settings"}, name
        assert step.per_kind == ("kind" in built) and set(step.needs) <= set(MODEL_ARGUMENTS), name
