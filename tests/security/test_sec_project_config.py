"""A project's kenning.toml is part of a cloned repository, so it may only name paths inside its own
folder: it cannot point the index at another of the user's indexes, nor make `kenning index` read the
user's home into a folder the repository controls."""

import os
import subprocess
import sys

import pytest

from kenning.api.settings import ConfigError, load_config
from kenning.places.locate import locate_index


@pytest.mark.parametrize(
    "text, key",
    [
        ('index = "../elsewhere/.kenning"\n', "index"),
        ('index = "/tmp/someone-elses-index"\n', "index"),
        ('[collections.home]\npaths = ["../.."]\n', "collections.home"),
        ('[collections.home]\npaths = ["docs", "/etc"]\n', "collections.home"),
    ],
)
def test_a_project_file_cannot_name_paths_outside_its_folder(tmp_path, text, key):
    project = tmp_path / "repo"
    project.mkdir()
    (project / "kenning.toml").write_text(text)
    with pytest.raises(ConfigError, match=rf"{key}.*outside"):
        load_config(project / "kenning.toml")


def test_a_link_out_of_the_project_is_outside_too(tmp_path):
    project = tmp_path / "repo"
    project.mkdir()
    (tmp_path / "private").mkdir()
    (project / "notes").symlink_to(tmp_path / "private")
    (project / "kenning.toml").write_text('[collections.n]\npaths = ["notes"]\n')
    with pytest.raises(ConfigError, match="outside"):
        load_config(project / "kenning.toml")


def test_paths_inside_the_project_are_kept(tmp_path):
    project = tmp_path / "repo"
    (project / "docs").mkdir(parents=True)
    (project / "kenning.toml").write_text('index = "ix"\n[collections.d]\npaths = ["docs", "."]\n')
    config = load_config(project / "kenning.toml")
    assert config.index == (project / "ix").resolve()
    assert config.collections["d"].paths == [(project / "docs").resolve(), project.resolve()]


def test_the_index_finder_ignores_a_project_index_outside_the_project(tmp_path):
    """kenning.places.locate reads kenning.toml's `index` on its own (the warm-server client uses it
    before the settings loader): an index outside the project is not taken there either."""
    project = tmp_path / "repo"
    project.mkdir()
    (project / "kenning.toml").write_text(f'index = "{tmp_path / "victim" / ".kenning"}"\n')
    assert locate_index(None, start=project) != tmp_path / "victim" / ".kenning"


def test_the_command_line_names_the_file_and_key(tmp_path):
    project = tmp_path / "repo"
    project.mkdir()
    (project / "kenning.toml").write_text('[collections.home]\npaths = ["../../.."]\n')
    env = {**os.environ, "KENNING_NO_SERVER": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "kenning.surfaces.entry", "index", "--no-embed"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    assert "kenning.toml" in run.stderr and "collections.home" in run.stderr
    assert not (project / ".kenning").exists() or not any((project / ".kenning").iterdir())
