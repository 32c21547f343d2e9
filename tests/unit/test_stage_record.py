"""The one skip-or-run rule of model-folder steps and experiment stages (clirplug.stage_record)."""

import os

import pytest

from clirplug.stage_record import is_current, output_states, record_key, write_record
from clirplug.train.cache import Stages

pytestmark = pytest.mark.unit


def test_a_record_is_current_until_its_key_or_an_output_changes(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("made\n")
    record = tmp_path / "stages" / "step.json"
    key = record_key({"settings": {"a": 1}})
    assert not is_current(record, key, [out])  # no record yet
    write_record(record, {"key": key, "output_states": output_states([out])})
    assert is_current(record, key, [out])
    assert not is_current(record, record_key({"settings": {"a": 2}}), [out])
    stat = out.stat()
    os.utime(out, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # touched, same bytes: still current
    assert is_current(record, key, [out])
    out.write_text("edit\n")  # same size, other bytes
    assert not is_current(record, key, [out])
    out.unlink()
    assert not is_current(record, key, [out])


def test_model_folder_steps_rerun_when_an_output_was_edited_and_survive_a_move(tmp_path):
    folder, runs = tmp_path / "model", []
    folder.mkdir()
    source = tmp_path / "input.txt"
    source.write_text("x\n")

    def step(at):
        def body():
            runs.append(at)
            (at / "table.txt").write_text(f"from {source.read_text()}")
        return Stages(at, force=False).run("step", [source], {"n": 1}, [at / "table.txt"], body)

    assert step(folder) and not step(folder) and runs == [folder]
    (folder / "table.txt").write_text("hand-edited\n")
    assert step(folder) and runs == [folder, folder]
    moved = folder.rename(tmp_path / "moved")
    assert not step(moved)  # outputs are recorded by their name inside the folder
    source.write_text("y\n")
    assert step(moved) and runs[-1] == moved
