"""kenning.toml: found by walking up, collections indexed with no paths, and precedence
flags > environment > file > defaults."""

import json
from pathlib import Path

import pytest

from kenning.api.settings import ConfigError, load_config
from kenning.places.locate import find_config
from kenning.surfaces.cli import main


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nalpha bravo charlie\n")
    (tmp_path / "notes" / "skip.txt").write_text("alpha in a text file\n")
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "b.py").write_text("def alpha():\n    return 'bravo'\n")
    (tmp_path / "kenning.toml").write_text(
        'index = "idx"\n'
        "[search]\nlimit = 1\ncoord_floor = 0.7\n"
        '[collections.notes]\npaths = ["notes"]\ninclude = ["*.md"]\n'
        '[collections.code]\npaths = ["code"]\n'
        '[glossary]\nscope = "notes"\n'
    )
    deeper = tmp_path / "notes" / "sub"
    deeper.mkdir()
    monkeypatch.chdir(deeper)
    monkeypatch.delenv("KENNING_INDEX", raising=False)
    return tmp_path


def test_found_by_walking_up(project):
    path = find_config()
    assert path == project / "kenning.toml"
    config = load_config(path)
    assert config.index == project / "idx" and config.search == {"limit": 1, "coord_floor": 0.7}
    assert set(config.collections) == {"notes", "code"} and config.glossary_scope == "notes"


def test_index_without_paths_uses_collections_and_search_uses_file_defaults(project, capsys, monkeypatch):
    assert main(["index", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["files_indexed"] == 2  # skip.txt is outside the notes include glob
    assert (project / "idx" / "index.db").is_file()
    main(["search", "alpha", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert len(data["hits"]) == 1 and data["params"]["coord_floor"] == 0.7  # file: limit 1
    main(["search", "alpha", "--json", "-n", "5"])
    assert len(json.loads(capsys.readouterr().out)["hits"]) == 2  # flag beats file
    monkeypatch.setenv("KENNING_COORD_FLOOR", "0.9")
    main(["search", "alpha", "--json"])
    assert json.loads(capsys.readouterr().out)["params"]["coord_floor"] == 0.9  # environment beats file
    main(["search", "alpha", "--json", "--coord-floor", "0.2"])
    assert json.loads(capsys.readouterr().out)["params"]["coord_floor"] == 0.2  # flag beats environment
    main(["search", "alpha", "-c", "code", "--json"])
    assert [h["title"] for h in json.loads(capsys.readouterr().out)["hits"]] == ["b.py > def alpha"]


def test_the_index_is_found_like_git_finds_a_repository(project, monkeypatch, capsys, tmp_path_factory):
    monkeypatch.setenv("KENNING_INDEX", str(project / "other"))
    assert main(["index", "-q"]) == 0  # inside the project its kenning.toml names the index
    assert (project / "idx" / "index.db").is_file() and not (project / "other").exists()
    deep = project / "notes" / "deeper"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)  # from a subfolder: found walking up
    capsys.readouterr()
    assert main(["search", "alpha", "--json"]) == 0 and json.loads(capsys.readouterr().out)["hits"]
    outside = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(outside)  # outside any project: the environment says where
    assert main(["index", str(project), "-q", "--no-embed"]) == 0
    assert (project / "other" / "index.db").is_file()
    monkeypatch.delenv("KENNING_INDEX")
    (outside / "sub").mkdir()
    monkeypatch.chdir(outside)
    assert main(["index", str(project / "code"), "-q", "--no-embed"]) == 0  # creates ./.kenning
    assert (outside / ".kenning" / "index.db").is_file()
    monkeypatch.chdir(outside / "sub")
    capsys.readouterr()
    assert main(["search", "alpha", "--json"]) == 0  # and finds it from below
    assert [Path(h["path"]).name for h in json.loads(capsys.readouterr().out)["hits"]] == ["b.py"]


def test_bad_config_names_file_and_key(project, capsys):
    (project / "kenning.toml").write_text("[search]\nk2 = 3\n")
    assert main(["search", "alpha"]) == 2
    err = capsys.readouterr().err
    assert "kenning.toml" in err and "k2 is not a search setting" in err
    (project / "kenning.toml").write_text("[search]\nlimit = 'many'\n")
    with pytest.raises(ConfigError, match=r"\[search\] limit"):
        load_config(project / "kenning.toml")
    (project / "kenning.toml").write_text("[collections.x]\n")
    with pytest.raises(ConfigError, match="needs paths"):
        load_config(project / "kenning.toml")


def test_a_server_store_comes_from_the_user_never_from_a_project(tmp_path, monkeypatch):
    """--store, then $KENNING_STORE, then the user's own config name a PostgreSQL store; a project's
    kenning.toml cannot (a cloned repository must not choose where your files go), and no config
    file may hold a password."""
    from kenning.api.settings import Config, resolve_index_dir

    user = tmp_path / "user.toml"
    monkeypatch.setenv("KENNING_CONFIG", str(user))
    monkeypatch.delenv("KENNING_STORE", raising=False)
    assert resolve_index_dir(None, Config(), start=tmp_path) == Path(".kenning")
    user.write_text('store = "postgresql://me@db.example/kb?schema=notes"\n')
    assert resolve_index_dir(None, Config(), start=tmp_path) == "postgresql://me@db.example/kb?schema=notes"
    monkeypatch.setenv("KENNING_STORE", "postgresql://other@db/x")
    assert resolve_index_dir(None, Config(), start=tmp_path) == "postgresql://other@db/x"
    assert resolve_index_dir("postgresql://flag@db/y", Config()) == "postgresql://flag@db/y"
    assert resolve_index_dir(str(tmp_path / "ix"), Config()) == tmp_path / "ix"
    monkeypatch.delenv("KENNING_STORE")
    user.write_text('store = "postgresql://me:hunter2@db.example/kb"\n')
    with pytest.raises(ConfigError, match="holds a password"):
        resolve_index_dir(None, Config(), start=tmp_path)
    project = tmp_path / "kenning.toml"
    project.write_text('store = "postgresql://attacker@evil.example/loot"\n')
    with pytest.raises(ConfigError, match="a project file cannot name a server store"):
        load_config(project)
