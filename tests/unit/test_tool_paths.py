"""A path the model guessed, mapped into the folder its file server was started on."""

from __future__ import annotations

from pathlib import Path

import pytest

from iris_voice.tools.paths import repair_paths, server_folders
from iris_voice.tools.registry import Tool, ToolSpec


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "shopping.txt").write_text("milk\n")
    (folder / "ideas.md").write_text("# Ideas\n")
    (folder / "trips").mkdir()
    (folder / "trips" / "rome.txt").write_text("the Colosseum\n")
    return folder


def files_tool(folders: list[str]) -> Tool:
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "head": {"type": "number"}}}
    return Tool(
        ToolSpec("files/read_text_file", "Read a file", schema), lambda **_: "", meta={"folders": folders}
    )


def test_the_folders_are_the_arguments_that_are_existing_directories(notes: Path, tmp_path: Path):
    args = [
        "/usr/lib/node_modules/server-filesystem/dist/index.js",
        str(notes),
        "relative/dir",
        str(tmp_path / "x"),
    ]
    assert server_folders(args) == [str(notes)]


@pytest.mark.parametrize(
    ("guessed", "mapped"),
    [
        ("/home/user/notes/shopping.txt", "shopping.txt"),  # the folder's name, then the file
        ("/home/user/notes", ""),  # the folder itself
        ("~/Documents/notes/ideas.txt", "ideas.md"),  # the one file with that stem
        ("shopping.txt", "shopping.txt"),  # relative: inside the folder
        ("/notes/trips/rome.txt", "trips/rome.txt"),
    ],
)
def test_a_guessed_path_is_mapped_into_the_folder(notes: Path, guessed: str, mapped: str):
    fixed = repair_paths(files_tool([str(notes)]), {"path": guessed, "head": 2})
    assert fixed == {"path": str(notes / mapped) if mapped else str(notes), "head": 2}


@pytest.mark.parametrize(
    "value",
    [
        "/home/user/notes/shopping_list.txt",  # no such file, no file of that stem: the server says so
        "/etc/passwd",  # nowhere in the folder
        "/home/user/documents/shopping.txt",  # not said to be in the notes folder
    ],
)
def test_what_maps_nowhere_stays_as_written(notes: Path, value: str):
    assert repair_paths(files_tool([str(notes)]), {"path": value}) == {"path": value}


def test_a_path_inside_the_folder_and_a_tool_without_folders_are_left_alone(notes: Path):
    inside = {"path": str(notes / "new.txt")}  # a file about to be written need not exist
    assert repair_paths(files_tool([str(notes)]), inside) == inside
    assert repair_paths(files_tool([]), {"path": "/home/user/notes"}) == {"path": "/home/user/notes"}


def test_a_list_of_paths_is_mapped_item_by_item(notes: Path):
    tool = files_tool([str(notes)])
    fixed = repair_paths(tool, {"paths": ["/home/user/notes/shopping.txt", "/etc/hosts"]})
    assert fixed == {"paths": [str(notes / "shopping.txt"), "/etc/hosts"]}


def test_a_path_two_folders_could_hold_is_not_guessed(tmp_path: Path):
    a, b = tmp_path / "a" / "notes", tmp_path / "b" / "notes"
    for folder in (a, b):
        folder.mkdir(parents=True)
        (folder / "todo.txt").write_text("x")
    value = "/home/user/notes/todo.txt"
    assert repair_paths(files_tool([str(a), str(b)]), {"path": value}) == {"path": value}


async def test_the_tool_loop_runs_the_call_with_the_mapped_path(notes: Path):
    from iris_voice.conversation.responder import ask
    from iris_voice.tools.registry import ToolRegistry
    from tests.support.fakes import ScriptedBackend, chat_assistant

    got: list[str] = []

    async def read(path: str) -> str:
        got.append(path)
        return Path(path).read_text()

    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    tool = Tool(ToolSpec("files/read_text_file", "Read a file", schema), read, meta={"folders": [str(notes)]})
    backend = ScriptedBackend([("files/read_text_file", {"path": "/home/user/notes/shopping.txt"})], "Milk.")
    trace = await ask(chat_assistant(backend, ToolRegistry([tool])), "What's on my shopping list?")
    assert got == [str(notes / "shopping.txt")] and trace.tool_calls[0]["ok"]
