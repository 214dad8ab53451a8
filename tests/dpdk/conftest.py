"""Fixtures for the DPDK real-system twin tests.

The session builds ``dpdk/`` with meson and ninja into a temporary directory
and checks that DPDK's EAL can start without hugepages or PCI devices. Only
when the DPDK development files or build tools are missing, or the EAL
cannot start at all on this machine, are the tests skipped.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from dpdk_helpers import EAL_MEMORY_MB, Background

REPO = Path(__file__).resolve().parents[2]
DPDK_SRC = REPO / "dpdk"
_counter = itertools.count()


def _skip(msg: str) -> None:
    pytest.skip(f"DPDK twin tests skipped: {msg}", allow_module_level=False)


@pytest.fixture(scope="session")
def dpdk_bin(tmp_path_factory) -> Path:
    """Directory holding the built programs."""
    for tool in ("meson", "ninja", "pkg-config"):
        if shutil.which(tool) is None:
            _skip(f"'{tool}' is not installed")
    probe = subprocess.run(["pkg-config", "--exists", "libdpdk"])
    if probe.returncode != 0:
        _skip("pkg-config cannot find libdpdk (install libdpdk-dev)")
    build = tmp_path_factory.mktemp("dpdk-build")
    setup = subprocess.run(
        ["meson", "setup", str(build), str(DPDK_SRC)],
        capture_output=True, text=True, timeout=180)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    ninja = subprocess.run(
        ["ninja", "-C", str(build), "-j2"],
        capture_output=True, text=True, timeout=600)
    assert ninja.returncode == 0, ninja.stdout + ninja.stderr
    _check_eal(build, tmp_path_factory.mktemp("eal-probe"))
    return build


def _check_eal(build: Path, tmp: Path) -> None:
    """Skip the suite if the EAL cannot come up at all on this machine."""
    res = subprocess.run(
        [str(build / "touchdrop"), "-l", "0", "--no-huge", "--no-pci",
         "-m", str(EAL_MEMORY_MB), "--file-prefix", f"hsprobe{os.getpid()}",
         "--vdev=net_null0", "--log-level=error", "--",
         "--run-time", "0.1"],
        capture_output=True, text=True, timeout=60, cwd=tmp)
    if res.returncode != 0 and "EAL initialisation failed" in res.stderr:
        _skip("DPDK EAL cannot start here: " + res.stderr.strip()[-300:])


@pytest.fixture
def background(dpdk_bin, tmp_path):
    """Start programs in the background; anything left is killed."""
    started: list[Background] = []

    def start(prog: str, eal: list[str], app: list[str]) -> Background:
        bg = Background(dpdk_bin, prog, eal, app, tmp_path)
        started.append(bg)
        return bg

    yield start
    for bg in started:
        bg.kill()


@pytest.fixture
def memif_socket(tmp_path) -> str:
    """A unique, short memif control socket path (sun_path is 108 bytes)."""
    path = Path(tempfile.gettempdir()) / f"hsmemif-{os.getpid()}-{next(_counter)}.sock"
    yield str(path)
    path.unlink(missing_ok=True)
