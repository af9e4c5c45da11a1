"""The swappable-path rule on real folders: owners, group and world write bits, sticky folders, missing parts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpstation.policy._paths import world_writable_reason

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX owners and permissions")

OTHER_UID = 54321  # nobody on this machine owns files as this uid
needs_root = pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="chown to another uid needs root")


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A folder of the station's user (mode 0755) in the test's private folder, with one executable in it."""
    folder = tmp_path / "home"
    folder.mkdir(mode=0o755)
    server = folder / "server"
    server.write_text("#!/bin/sh\n")
    server.chmod(0o755)
    yield folder


@pytest.fixture
def sticky(tmp_path: Path) -> Iterator[Path]:
    """A folder like /tmp: world-writable and sticky."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    yield folder
    folder.chmod(0o755)


def test_a_clone_under_tmp_keeps_its_own_interpreter(tmp_path: Path) -> None:
    # /tmp is sticky, and everything below it on the way belongs to the station's user
    clone = tmp_path / "clone" / ".venv" / "bin"
    clone.mkdir(parents=True, mode=0o755)
    python = clone / "python"
    python.symlink_to(sys.executable)
    assert str(tmp_path).startswith("/tmp/") or str(tmp_path).startswith(os.path.realpath("/tmp"))
    assert world_writable_reason(str(python)) is None
    assert world_writable_reason(sys.executable) is None


def test_an_own_folder_inside_a_sticky_folder_is_safe(sticky: Path) -> None:
    own = sticky / "own"
    own.mkdir(mode=0o755)
    (own / "server").write_text("#!/bin/sh\n")
    assert world_writable_reason(str(own / "server")) is None
    assert world_writable_reason(str(own / "later")) is None  # whoever may write `own` is us alone


def test_a_path_not_there_yet_under_a_sticky_folder_is_refused(sticky: Path) -> None:
    reason = world_writable_reason(str(sticky / "not-yet" / "server"))
    assert reason is not None and "does not exist yet" in reason and str(sticky) in reason
    assert world_writable_reason("/tmp/mcpstation-surely-missing/server") is not None


def test_the_sticky_folder_itself_is_refused(sticky: Path) -> None:
    reason = world_writable_reason(str(sticky))
    assert reason is not None and "world-writable" in reason


def test_a_non_sticky_world_writable_folder_refuses_all_below_it(home: Path) -> None:
    home.chmod(0o777)
    try:
        for path in (home / "server", home / "not-yet" / "server"):
            reason = world_writable_reason(str(path))
            assert reason is not None and f"world-writable directory {home}" in reason, path
    finally:
        home.chmod(0o755)


def test_a_group_writable_file_or_folder_is_refused(home: Path) -> None:
    (home / "server").chmod(0o775)
    reason = world_writable_reason(str(home / "server"))
    assert reason is not None and "group-writable" in reason
    (home / "server").chmod(0o755)
    home.chmod(0o775)
    try:
        reason = world_writable_reason(str(home / "server"))
        assert reason is not None and f"group-writable directory {home}" in reason
    finally:
        home.chmod(0o755)


@needs_root
def test_a_folder_owned_by_another_user_is_refused_even_when_closed(home: Path) -> None:
    os.chown(home, OTHER_UID, -1)
    reason = world_writable_reason(str(home / "server"))
    assert reason is not None and f"uid {OTHER_UID}" in reason


@needs_root
def test_another_users_entry_in_a_sticky_folder_is_refused(sticky: Path, home: Path) -> None:
    theirs = sticky / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, OTHER_UID, -1)
    reason = world_writable_reason(str(theirs / "server"))
    assert reason is not None and f"uid {OTHER_UID}" in reason
    # a symlink they own may be pointed elsewhere at any time, whatever it points to now
    link = sticky / "link"
    link.symlink_to(home / "server")
    os.lchown(link, OTHER_UID, -1)
    reason = world_writable_reason(str(link))
    assert reason is not None and f"uid {OTHER_UID}" in reason


def test_a_symlink_is_judged_where_it_leads(home: Path, sticky: Path) -> None:
    (home / "into-shared").symlink_to(sticky)
    reason = world_writable_reason(str(home / "into-shared" / "server"))
    assert reason is not None and "does not exist yet" in reason


def test_a_shared_folder_this_machine_lacks_is_refused_by_name() -> None:
    assert not os.path.lexists("/private/tmp")  # a Linux machine
    reason = world_writable_reason("/private/tmp/server")
    assert reason is not None and "/private/tmp" in reason


def test_a_relative_path_is_judged_from_its_base(home: Path, sticky: Path) -> None:
    assert world_writable_reason("server", base=str(home)) is None
    assert world_writable_reason("server", base=str(sticky)) is not None


PLUGINS = ("-p", "anyio.pytest_plugin")
LOCATION_TESTS = ("tests/policy/test_runtime_admission.py", "tests/connection/test_command_resolution.py")


@pytest.mark.long
def test_a_copy_of_the_project_under_tmp_passes_the_tests_that_care_where_they_live(tmp_path: Path) -> None:
    """A clone under /tmp runs its own `.venv/bin/python` and its own sources: the admission rules and
    command resolution must hold there as they do here."""
    project = Path(__file__).resolve().parents[2]
    clone = tmp_path / "clone"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".venv", "node_modules", ".git", "*.egg-info")
    for part in ("src", "tests", "bench"):
        shutil.copytree(project / part, clone / part, ignore=skip)
    shutil.copy2(project / "pyproject.toml", clone / "pyproject.toml")
    venv = clone / ".venv"  # a venv there that sees this one's packages, editable installs too
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = sysconfig.get_paths()["purelib"]
    (venv_site(venv) / "parent.pth").write_text(f"import site; site.addsitedir({purelib!r})\n")
    own_scripts(Path(sys.executable).parent, venv / "bin")
    env = {
        **os.environ,
        "PYTHONPATH": str(clone / "src"),  # the copy's own sources, ahead of this checkout's editable install
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # langsmith's plugin alone costs seconds
    }
    python = str(venv / "bin" / "python")
    where = subprocess.run(
        [python, "-c", "import mcpstation; print(mcpstation.__file__)"], env=env, capture_output=True, text=True
    )
    assert where.stdout.strip().startswith(str(clone / "src")), where
    done = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_timeout", *PLUGINS, *LOCATION_TESTS],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and " failed" not in done.stdout


def own_scripts(source: Path, target: Path) -> None:
    """The console scripts of this venv's packages, pointed at the other venv's interpreter."""
    shebang = f"#!{source / 'python'}"
    for script in source.iterdir():
        if script.is_file() and not (target / script.name).exists():
            head, _, rest = script.read_bytes().partition(b"\n")
            if head.decode(errors="replace").startswith(shebang):
                copied = target / script.name
                copied.write_bytes(f"#!{target / 'python'}".encode() + b"\n" + rest)
                copied.chmod(0o755)


def venv_site(venv: Path) -> Path:
    found = list((venv / "lib").glob("python3*/site-packages"))
    assert len(found) == 1, found
    return found[0]
