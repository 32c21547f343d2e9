"""The cheap partners in an experiment's plan: DT with RM3 and dense retrieval of DT's 1-best share DT's
translations (cross-fitted on the tune split) and the dense run's document vectors; untranslated words are
counted per split and field. Planning only: nothing runs."""

import pytest

pytestmark = pytest.mark.unit

PARTNERS = """
  dense-dt:
    method: dense
    query: translation
    kind: flat
    grid:
      words: [16, 48]
  dt-rm3:
    method: dt
    kind: flat
    prf: rm3
    fb_terms: 20
  dt-rm3-tuned:
    method: dt
    kind: flat
    prf: rm3
    grid: {fb_terms: [10, 20], original_query_weight: [0.3, 0.5]}
  dense-dt+dense:
    method: fusion
    runs: [dense-dt, dense]
  dt-rm3+dense:
    method: fusion
    runs: [dt-rm3, dense]
"""


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    from clirplug.data import demo_config
    from clirplug.experiment.config import load_config
    from clirplug.experiment.plan import build_plan

    demo = demo_config()
    text = demo.read_text(encoding="utf-8").replace("  path: demo ", f"  path: {demo.parent / 'demo'} ")
    config = tmp_path_factory.mktemp("partners") / "partners.yaml"
    config.write_text(text + PARTNERS, encoding="utf-8")
    return build_plan(load_config(config, [f"root={config.parent}"]))


def test_dense_on_the_translation_reuses_dt_s_translations_and_the_dense_vectors(plan):
    stages = plan.stages
    embeds = sorted(name for name in stages if stages[name].kind == "dense-embed")
    assert embeds == ["dense-embed.w16", "dense-embed.w48"]  # the dense run's: none for the translated queries
    dev = stages[plan.run_stages[("dense-dt", "dev", "title")]]
    assert dev.settings["query"] == "translation" and "translate.flat.dev.title" in dev.deps
    assert stages[plan.run_stages[("dt", "dev", "title")]].deps[1] == "translate.flat.dev.title"  # DT's own
    tune = stages["tune.dense-dt.title"]
    assert tune.settings["query"] == "translation" and tune.settings["split"] == "train"
    assert {f"translate.flat.train.f{k}.title" for k in range(3)} <= set(tune.deps)  # cross-fitted translations
    joined = stages[plan.run_stages[("dense-dt", "train", "title")]]
    assert joined.kind == "join" and [stages[d].deps[-1] for d in joined.deps] == [
        f"translate.flat.train.f{k}.title" for k in range(3)]


def test_dt_with_rm3_differs_from_dt_only_by_its_rm3_setting(plan):
    dt, rm3 = (plan.stages[plan.run_stages[(name, "dev", "desc")]] for name in ("dt", "dt-rm3"))
    assert rm3.deps == dt.deps and rm3.inputs_from == dt.inputs_from  # the same translations
    assert {k: v for k, v in rm3.settings.items() if k != "rm3"} == dt.settings and "rm3" not in dt.settings
    assert rm3.settings["rm3"] == {"fb_terms": 20, "fb_docs": 10, "original_query_weight": 0.5}
    assert ("dt-rm3", "train", "desc") in plan.run_stages  # its fusion is tuned on the cross-fitted train runs


def test_untranslated_words_are_counted_per_split_and_field_with_each_part_s_model(plan):
    train, dev = plan.stages["oov.train.title"], plan.stages["oov.dev.title"]
    assert [model.rsplit("/", 1)[-1] for _, model in train.settings["parts"]] == ["fold-0", "fold-1", "fold-2"]
    assert {"model.align.f0", "model.align.f1", "model.align.f2"} <= set(train.deps)
    assert dev.deps == ("model.align",) and len(dev.settings["parts"]) == 1
    assert plan.stages["dictionary-segmentation"].deps == ("model.align",)


def test_rm3_chosen_on_the_tune_split_s_cross_fitted_translations(plan):
    tune = plan.stages["tune.dt-rm3-tuned.title"]
    assert tune.kind == "rm3-tune" and tune.settings["split"] == "train"
    assert [rm3["fb_terms"] for rm3 in tune.settings["grid"]] == [10, 10, 20, 20]
    assert [path.name for path in tune.inputs_from] == [f"train.f{k}.title.flat.jsonl" for k in range(3)]
    run = plan.stages[plan.run_stages[("dt-rm3-tuned", "dev", "title")]]
    assert run.deps[-1] == tune.name and run.inputs_from[-1] == tune.outputs[0]
    assert run.settings["rm3"] == {"grid": tune.settings["grid"]}


def test_a_grid_of_rm3_without_rm3_is_refused():
    from clirplug.errors import ClirplugError
    from clirplug.methods import DtRun

    with pytest.raises(ClirplugError, match="runs.x.grid: a grid of RM3's parameters needs prf: rm3"):
        DtRun.from_mapping({"grid": {"fb_terms": [5]}}, "runs.x")
