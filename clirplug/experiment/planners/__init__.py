"""The experiment's planners, a module per method of ``runs:``.

A method's module holds its planner, ``plan_<method>(plan, spec, splits)``, which adds the stages of the runs of
``spec`` (a :class:`clirplug.experiment.config.RunSpec`) on ``splits`` and every field to ``plan`` (a
:class:`clirplug.experiment.plan.Plan`), the stage kinds only that method has, each a thin call of its library
function (:func:`clirplug.experiment.kinds.stage_kind`), and the system of each of its run stages
(:func:`clirplug.experiment.systems.describes`). The registry names the planner
(:attr:`clirplug.methods.Method.planner`); the module is imported when a config names the method.
"""
