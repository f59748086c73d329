"""Debian packages the tests need (a real Redis, bubblewrap), installed when absent."""

from __future__ import annotations

import shutil
import subprocess


def debian_binary(command: str, package: str) -> str:
    """The path of ``command``, installing Debian's ``package`` when it is missing."""
    found = shutil.which(command)
    if found:
        return found
    install = ["apt-get", "install", "-y", "--no-install-recommends", package]
    if subprocess.run(install, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update"], capture_output=True, check=True)
        subprocess.run(install, capture_output=True, check=True)
    found = shutil.which(command)
    if not found:
        raise RuntimeError(f"{command} is not on PATH after installing {package}")
    return found
