"""Helpers to run the DPDK twin programs from tests: EAL arguments with a
unique --file-prefix, runs with timeouts, background processes stopped by
SIGINT, and loading their --json results."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

EAL_MEMORY_MB = 256
_counter = itertools.count()


def eal_args(tmp: Path, vdevs: list[str], lcore: int = 0) -> list[str]:
    """EAL options for one process: no hugepages, no PCI, unique prefix."""
    prefix = f"hst{os.getpid()}_{next(_counter)}"
    args = ["-l", str(lcore), "--no-huge", "--no-pci",
            "-m", str(EAL_MEMORY_MB), "--file-prefix", prefix,
            "--log-level=warning"]
    for v in vdevs:
        args.append(f"--vdev={v}")
    return args


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    result: dict | None


def run_prog(dpdk_bin: Path, prog: str, eal: list[str], app: list[str],
             tmp: Path, timeout: float = 60) -> Run:
    """Run a program to completion and load its --json result."""
    out_json = tmp / f"{prog}-{next(_counter)}.json"
    cmd = [str(dpdk_bin / prog), *eal, "--", *app, "--json", str(out_json)]
    res = subprocess.run(cmd, capture_output=True, text=True,
                         timeout=timeout, cwd=tmp)
    result = json.loads(out_json.read_text()) if out_json.exists() else None
    return Run(res.returncode, res.stdout, res.stderr, result)


class Background:
    """A program running in the background, stopped with SIGINT."""

    def __init__(self, dpdk_bin: Path, prog: str, eal: list[str],
                 app: list[str], tmp: Path):
        self.json_path = tmp / f"{prog}-{next(_counter)}.json"
        self.log = open(tmp / f"{prog}-{next(_counter)}.log", "w+")
        cmd = [str(dpdk_bin / prog), *eal, "--", *app,
               "--json", str(self.json_path)]
        self.proc = subprocess.Popen(cmd, stdout=self.log,
                                     stderr=subprocess.STDOUT, cwd=tmp)

    def wait_for(self, text: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.log.seek(0)
            if text in self.log.read():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.log.seek(0)
        raise AssertionError(f"'{text}' not seen; output:\n{self.log.read()}")

    def stop(self, timeout: float = 20) -> Run:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        return self.wait(timeout)

    def wait(self, timeout: float = 60) -> Run:
        """Wait for the program to finish by itself (killed after timeout)."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self.log.seek(0)
        text = self.log.read()
        self.log.close()
        result = (json.loads(self.json_path.read_text())
                  if self.json_path.exists() else None)
        return Run(self.proc.returncode, text, "", result)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


