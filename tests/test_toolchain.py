"""The toolchain installs the project's own pins, whatever constraint the machine sets."""

import json
import os
import subprocess
import sys
import zipfile

import pytest

from book_extensions.commands import toolchain
from book_extensions.records import release_list


def wheel(folder, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as archive:
        archive.writestr(f"{name}/__init__.py", "")
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                         + "".join(f"Requires-Dist: {r}\n" for r in requires))
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")


def test_our_pins_win_over_a_site_wide_constraint(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for version in ("1.0", "2.0"):
        wheel(wheels, "bookpin", version)
    # A machine that caps the package below our pin, as this workplace's pip config caps torch.
    (tmp_path / "site.txt").write_text("bookpin<=1.0\n")
    (tmp_path / "pip.conf").write_text(f"[global]\nconstraint = {tmp_path / 'site.txt'}\n")
    pins = tmp_path / "pins.txt"
    pins.write_text("bookpin==2.0\n")
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--find-links", str(wheels),
               "--quiet", "--report", "-", "-r", str(pins)]
    machine = {k: v for k, v in os.environ.items() if k != "PIP_CONSTRAINT"}
    machine["PIP_CONFIG_FILE"] = str(tmp_path / "pip.conf")

    blocked = subprocess.run(command, env=machine, capture_output=True, text=True)
    assert blocked.returncode != 0 and "bookpin" in blocked.stderr  # what a plain install gets

    ours = {**toolchain.pip_environment(pins), "PIP_CONFIG_FILE": str(tmp_path / "pip.conf")}
    installed = subprocess.run(command, env=ours, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    report = json.loads(installed.stdout)
    assert [(i["metadata"]["name"], i["metadata"]["version"]) for i in report["install"]] == [("bookpin", "2.0")]


def test_an_environment_differs_from_the_pins_only_in_torch(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# pins\ntorch==2.15.0\nnumpy==2.4.6\n")
    assert toolchain.pinned_torch(requirements) == "2.15.0"
    assert toolchain.pins("2.13.0", requirements) == "# pins\ntorch==2.13.0\nnumpy==2.4.6\n"
    assert toolchain.pins(None, requirements) == requirements.read_text()
    with pytest.raises(toolchain.ToolchainError, match="not a torch release: '2.13; rm -rf'"):
        toolchain.pins("2.13; rm -rf", requirements)
    requirements.write_text("numpy==2.4.6\n")
    with pytest.raises(toolchain.ToolchainError, match="requirements.txt: expected exactly one 'torch==<release>' line, found 0"):
        toolchain.pinned_torch(requirements)


def test_the_book_pins_torch_once_and_lists_it_among_its_releases():
    assert toolchain.pinned_torch() in release_list.listed()


# --- one environment, kept in sync with requirements.txt by one session at a time ------

@pytest.fixture
def fake_toolchain(tmp_path, monkeypatch):
    """ensure() on tiny local wheels (a fake torch among them): requirements in tmp_path,
    the environment in tmp_path/.toolchain, pip offline."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel(wheels, "torch", "9.9.9")
    wheel(wheels, "bookpin", "1.0", requires=("bookdep",))
    for name in ("bookdep", "bookextra", "handmade"):
        wheel(wheels, name, "1.0")
    requirements = tmp_path / "requirements.txt"
    monkeypatch.setattr(toolchain, "ROOT", tmp_path)
    monkeypatch.setattr(toolchain, "pins", lambda release=None: requirements.read_text())
    monkeypatch.setattr(toolchain, "location", lambda release: tmp_path / ".toolchain" / f"torch-{release}")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return requirements


def installed(env) -> set[str]:
    listing = subprocess.run([str(toolchain.python_of(env)), "-m", "pip", "list", "--format", "json"],
                             capture_output=True, text=True, check=True)
    return {package["name"] for package in json.loads(listing.stdout)}


@pytest.mark.fixture
def test_a_package_dropped_from_the_requirements_leaves_the_environment(fake_toolchain):
    fake_toolchain.write_text("torch==9.9.9\nbookpin==1.0\nbookdep==1.0\nbookextra==1.0\n")
    env = toolchain.ensure("9.9.9")
    subprocess.run([str(toolchain.python_of(env)), "-m", "pip", "install", "-q", "handmade"], check=True)
    assert {"torch", "bookpin", "bookdep", "bookextra", "handmade"} <= installed(env)
    # bookextra goes; bookdep is no longer pinned but bookpin still requires it.
    fake_toolchain.write_text("torch==9.9.9\nbookpin==1.0\n")
    said = []
    assert toolchain.ensure("9.9.9", log=said.append) == env
    now = installed(env)
    assert "bookextra" not in now
    assert {"torch", "bookpin", "bookdep", "handmade", "pip"} <= now  # installed by hand: not the pins' to remove
    assert said == [f"removing bookextra from {env.relative_to(toolchain.ROOT)}/: requirements.txt no longer names them"]
    assert (env / "book-pins.txt").read_text() == fake_toolchain.read_text()


@pytest.mark.fixture
def test_a_second_session_waits_for_the_one_installing(fake_toolchain):
    import fcntl
    import threading

    fake_toolchain.write_text("torch==9.9.9\nbookpin==1.0\n")
    env = toolchain.ensure("9.9.9")
    fake_toolchain.write_text("torch==9.9.9\nbookpin==1.0\nbookextra==1.0\n")
    said = []
    with open(env.with_name(env.name + ".lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as a session updating it holds it
        second = threading.Thread(target=toolchain.ensure, args=("9.9.9",), kwargs={"log": said.append})
        second.start()
        second.join(timeout=3)
        assert second.is_alive()  # still waiting
        assert said == [f"waiting for {env.relative_to(toolchain.ROOT)}/: another session is creating or updating it"]
    second.join(timeout=120)
    assert not second.is_alive()
    assert "bookextra" in installed(env)


@pytest.mark.fixture
def test_an_update_waits_for_a_build_running_on_the_environment(fake_toolchain):
    import threading

    fake_toolchain.write_text("torch==9.9.9\nbookpin==1.0\n")
    env = toolchain.ensure("9.9.9")
    building = toolchain.hold_shared(env)  # as a build holds it for its whole run
    fake_toolchain.write_text("torch==9.9.9\nbookpin==1.0\nbookextra==1.0\n")  # requirements.txt edited meanwhile
    said = []
    try:
        second = threading.Thread(target=toolchain.ensure, args=("9.9.9",), kwargs={"log": said.append})
        second.start()
        second.join(timeout=3)
        assert second.is_alive() and "bookextra" not in installed(env)  # nothing replaced under the build
        assert said == [f"waiting for {env.relative_to(toolchain.ROOT)}/: a build (or `nox -s serve`) is running "
                        "on it, and requirements.txt changed; it is updated once they end"]
    finally:
        os.close(building)
    second.join(timeout=120)
    assert not second.is_alive()
    assert "bookextra" in installed(env)


@pytest.mark.unit
@pytest.mark.parametrize("tool", ["determinism", "releases record"])
def test_tools_that_execute_pages_hold_the_environment_as_a_build_does(tool, monkeypatch, capsys, tmp_path):
    from book_extensions.commands import determinism
    from book_extensions.records import release_records

    main = {"determinism": determinism.main, "releases record": release_records.main}[tool]
    args = ["record"] if tool == "releases record" else []
    # A session updating the environment: refused in one line, before a page executes.
    busy = toolchain.ToolchainError(".toolchain/torch-2.15.0/ is being created or updated by another session")
    monkeypatch.setattr(toolchain, "hold_shared", lambda prefix=None: (_ for _ in ()).throw(busy))
    executed = []
    monkeypatch.setattr(determinism, "check", lambda *a: executed.append(a) or (0, []))
    monkeypatch.setattr(release_records, "record", lambda *a: executed.append(a))
    assert main(args) == 2 and executed == []
    assert capsys.readouterr().err == f"error: {busy}\n"
    # Otherwise the lock is held while the pages execute, and let go after.
    held = os.open(tmp_path / "lock", os.O_RDONLY | os.O_CREAT)
    monkeypatch.setattr(toolchain, "hold_shared", lambda prefix=None: held)
    monkeypatch.setattr(determinism, "check", lambda *a: (os.fstat(held), executed.append(a))[0] and (0, []))
    monkeypatch.setattr(release_records, "record", lambda *a: (os.fstat(held), executed.append(a)))
    assert main(args) == 0 and len(executed) == 1
    with pytest.raises(OSError):
        os.fstat(held)  # closed once the tool is done
