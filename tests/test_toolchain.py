"""The toolchain installs the project's own pins, whatever constraint the machine sets."""

import json
import os
import subprocess
import sys
import zipfile

import pytest

from book_extensions.tools import toolchain


def wheel(folder, name: str, version: str) -> None:
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as archive:
        archive.writestr(f"{name}/__init__.py", "")
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
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
    assert toolchain.pinned_torch() in toolchain.listed_releases()
