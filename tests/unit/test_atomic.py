"""clirplug.atomic: what an output may name (check_output), and writes that replace only regular files."""

import os
import re

import pytest

from clirplug.atomic import STDOUT, atomic_open, atomic_path, check_output, not_regular, open_output
from clirplug.errors import ClirplugError

pytestmark = pytest.mark.unit


@pytest.fixture
def place(tmp_path, monkeypatch):
    """A folder holding a regular file, a folder, links to both, a dangling link and a FIFO (the current folder)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("old")
    (tmp_path / "folder").mkdir()
    os.symlink("file", tmp_path / "to-file")
    os.symlink("folder", tmp_path / "to-folder")
    os.symlink("nowhere", tmp_path / "dangling")
    os.mkfifo(tmp_path / "fifo")
    return tmp_path


def test_not_regular_names_what_the_name_itself_is(place):
    assert [not_regular(name) for name in ("file", "missing", "file/below", "folder", "to-file", "to-folder",
                                           "dangling", "fifo", "/dev/null")] == [
        None, None, None, "a folder", "a symbolic link", "a symbolic link", "a symbolic link", "a FIFO (named pipe)",
        "a character device"]


# (output, keywords of check_output, the error; None: accepted)
FILE_CASES = [
    ("new.trec", {}, None),
    ("file", {}, None),
    ("missing/deeper/run.trec", {}, None),  # the folders are created when it is written
    ("to-folder/run.trec", {}, None),  # written in the folder the link names; the link stays
    ("-", {"stdout": True}, None),
    ("folder", {}, "--output folder: is a folder; name the file to write"),
    ("to-folder", {}, "--output to-folder: is a folder; name the file to write"),
    ("new/", {}, "--output new/: is a folder; name the file to write"),
    (".", {}, "--output .: is a folder; name the file to write"),
    ("to-file", {}, "--output to-file: is a symbolic link, which writing would replace; name a regular file"),
    ("dangling", {}, "--output dangling: is a symbolic link, which writing would replace; name a regular file"),
    ("fifo", {"stdout": True},
     "--output fifo: is a FIFO (named pipe), which writing would replace; name a regular file or - (standard output)"),
    ("/dev/null", {}, "--output /dev/null: is a character device, which writing would replace; name a regular file"),
    ("-", {}, "--output -: this option cannot write to standard output; name a file"),
    ("file/run.trec", {}, "--output file/run.trec: file is not a folder"),
    ("dangling/run.trec", {}, "--output dangling/run.trec: dangling is not a folder"),
    ("file/a/b/run.trec", {}, "--output file/a/b/run.trec: file is not a folder"),
]
FOLDER_CASES = [
    ("folder", None),
    ("to-folder", None),
    ("new/model", None),
    ("new/", None),
    ("file", "--output file: is a file, not a folder"),
    ("to-file", "--output to-file: is a symbolic link, not a folder"),
    ("dangling", "--output dangling: is a symbolic link, not a folder"),
    ("fifo", "--output fifo: is a FIFO (named pipe), not a folder"),
    ("file/model", "--output file/model: file is not a folder"),
    ("-", "--output -: this option cannot write to standard output; name a folder"),
]


@pytest.mark.parametrize("path, keywords, error", FILE_CASES)
def test_a_file_output_is_missing_or_a_regular_file_below_folders(place, path, keywords, error):
    before = sorted(os.listdir(place))
    if error is None:
        check_output(path, **keywords)
    else:
        with pytest.raises(ClirplugError, match=f"^{re.escape(error)}$"):
            check_output(path, **keywords)
    assert sorted(os.listdir(place)) == before  # checking creates nothing


@pytest.mark.parametrize("path, error", FOLDER_CASES)
def test_a_folder_output_is_missing_or_a_folder(place, path, error):
    if error is None:
        check_output(path, folder=True)
    else:
        with pytest.raises(ClirplugError, match=f"^{re.escape(error)}$"):
            check_output(path, folder=True)


def test_a_prefix_is_checked_as_each_of_its_files(place):
    os.symlink("file", place / "curve.png")
    check_output("other", "--curve", suffixes=(".tsv", ".png"))
    with pytest.raises(ClirplugError, match=r"^--curve curve\.png: is a symbolic link"):
        check_output("curve", "--curve", suffixes=(".tsv", ".png"))
    with pytest.raises(ClirplugError, match="^--curve folder/: is a folder"):  # it would write folder/.tsv
        check_output("folder/", "--curve", suffixes=(".tsv", ".png"))


def test_a_write_creates_missing_folders_and_replaces_a_regular_file_whole(place):
    with atomic_open(place / "a" / "b" / "run.trec") as handle:
        handle.write("new")
    with atomic_open(place / "file") as handle:
        handle.write("new")
    assert (place / "a" / "b" / "run.trec").read_text() == (place / "file").read_text() == "new"
    assert sorted(os.listdir(place / "a" / "b")) == ["run.trec"]  # no temporary left


@pytest.mark.parametrize("name, kind", [("to-file", "a symbolic link"), ("dangling", "a symbolic link"),
                                        ("fifo", r"a FIFO \(named pipe\)"), ("folder", "a folder")])
def test_a_write_never_replaces_what_is_not_a_regular_file(place, name, kind):
    before = {path: not_regular(path) for path in os.listdir(place)}
    with pytest.raises(ClirplugError, match=f"{name}: is {kind}; refusing to replace it"):
        with atomic_open(place / name) as handle:
            handle.write("new")
    assert {path: not_regular(path) for path in os.listdir(place)} == before
    assert (place / "file").read_text() == "old"


def test_a_link_made_while_writing_is_not_replaced(place):
    with pytest.raises(ClirplugError, match="run.trec: is a symbolic link; refusing to replace it"):
        with atomic_path(place / "run.trec") as tmp:
            tmp.write_text("new")
            os.symlink("file", place / "run.trec")  # someone else's link appears while we write
    assert os.readlink(place / "run.trec") == "file" and (place / "file").read_text() == "old"
    assert not [name for name in os.listdir(place) if name.endswith(".tmp")]


def test_open_output_writes_dash_to_standard_output(place, capsys):
    with open_output(STDOUT) as handle:
        handle.write("q1 Q0 d 1 1.0 t\n")
    assert capsys.readouterr().out == "q1 Q0 d 1 1.0 t\n"
    assert not (place / "-").exists()
    with open_output(place / "run.trec") as handle:
        handle.write("x\n")
    assert (place / "run.trec").read_text() == "x\n"
