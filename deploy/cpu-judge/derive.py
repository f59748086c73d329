"""Model folders for cpujudge.sh's optional judges, derived from the two default models.

An optional judge serves default weights another way; some ways need a folder of their own
(e.g. a tokenizer with extra special tokens, or a classification head). Each entry of
``DERIVATIONS`` makes one such folder from the default folders, deterministically and
offline, and runs in the cpu-judge venv (torch, transformers).

    python derive.py --list                       the keys that have a derivation
    python derive.py KEY --models DIR --out DIR   make KEY's folder from DIR's defaults
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

# key (as in cpujudge.sh's EXTRAS) -> (models folder, output folder) -> None
DERIVATIONS: dict[str, Callable[[Path, Path], None]] = {}


def main() -> None:
    """Make one derived folder, or list the keys that have one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("key", nargs="?")
    parser.add_argument("--list", action="store_true", help="print the keys, one a line")
    parser.add_argument("--models", type=Path, help="the folder holding the default models")
    parser.add_argument("--out", type=Path, help="where the derived folder goes")
    args = parser.parse_args()
    if args.list:
        print("\n".join(DERIVATIONS))
        return
    if args.key not in DERIVATIONS or args.models is None or args.out is None:
        parser.error(f"give a key ({', '.join(DERIVATIONS) or 'none yet'}), --models and --out")
    DERIVATIONS[args.key](args.models, args.out)


if __name__ == "__main__":
    main()
