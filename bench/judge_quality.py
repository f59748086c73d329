"""How well each local CPU judge judges: `rewardsvc eval` on the project's labelled data,
with the Qwen2.5-Coder-1.5B judge and the two tiny judges side by side in one run.

The pool joins make serve's ``primary`` (the 1.5B) with the tiny pool's two judges under
their own names, and the rubric (``rubrics/data/pref-quality.yaml``) is scored by all three,
so every judge reads the same prompts in the same run. Needs the servers up::

    deploy/cpu-judge/cpujudge.sh start qwen-1.5b smollm2 gemma
    .venv/bin/python -m bench.judge_quality              # into bench/results/local/

About 4 min on 2 busy cores (24 labelled answers and 24 labelled pairs, 2 criteria, 3 judges).
The weights of ``deploy/cpu-judge/judges.serve.yaml`` come from this table (ROC AUC - 0.5).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.outputs import add_out_argument, write_results
from rewardsvc.evaluation import report
from rewardsvc.library.yamlfile import parse_yaml

ROOT = Path(__file__).resolve().parent.parent
CPU = ROOT / "deploy" / "cpu-judge"
DATA = ROOT / "rubrics" / "data"
JUDGES = {
    "qwen-1.5b": (CPU / "judges.serve.yaml", "primary"),
    "smollm2": (CPU / "judges.yaml", "primary"),
    "gemma": (CPU / "judges.yaml", "secondary"),
}
"""Each judge of the run: its name here, and the pool file and name it is taken from."""


def read(path: Path) -> Any:
    """A YAML file of the repository as plain data."""
    return parse_yaml(path.read_text(), str(path))


def compose(folder: Path) -> tuple[Path, Path]:
    """The three-judge pool and the rubric that lists its judges, written into ``folder``."""
    pool: dict[str, Any] = {"judges": {}}
    for name, (path, key) in JUDGES.items():
        entry = dict(read(path)["judges"][key])
        entry.pop("weight", None)  # each judge alone: the weights are what this measures
        pool["judges"][name] = entry
    rubric = read(DATA / "pref-quality.yaml")
    rubric["judges"] = list(JUDGES)
    pool_file, rubric_file = folder / "judges.yaml", folder / "pref-quality.yaml"
    pool_file.write_text(json.dumps(pool))  # JSON is YAML
    rubric_file.write_text(json.dumps(rubric))
    return pool_file, rubric_file


def evaluate(pool: Path, rubric: Path, data: Path) -> dict[str, Any]:
    """``rewardsvc eval --json`` of ``data``, in-process scoring."""
    command = [sys.executable, "-m", "rewardsvc.cli", "eval", "--json", "--no-progress"]
    command += ["--judges", str(pool), "--rubric", str(rubric), str(data)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_out_argument(parser)
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        pool, rubric = compose(Path(tmp))
        runs = {
            name: evaluate(pool, rubric, DATA / name)
            for name in ("pointwise-small.jsonl", "preferences-small.jsonl")
        }
    seconds = time.monotonic() - started
    lines = [
        "# Judge quality: the local CPU judges on labelled data",
        "",
        "- Command: `.venv/bin/python -m bench.judge_quality --out bench/results`",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {seconds:.0f} s",
        "- Judges: " + ", ".join(f"`{n}`" for n in JUDGES) + " in one pool, every one scoring "
        "`rubrics/data/pref-quality.yaml` (2 criteria); `rule:` rows combine all three.",
        "",
    ]
    for name, result in runs.items():
        lines += [f"## `rubrics/data/{name}`", "", report.markdown(result), ""]
    write_results(args.out, "judge_quality", {"seconds": seconds, "runs": runs}, "\n".join(lines))


if __name__ == "__main__":
    main()
