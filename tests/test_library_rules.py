"""Rubric rules that stop silent wrong rewards: finite numbers, known flags, no bonuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rewardsvc.core.pool import JudgePool
from rewardsvc.core.rubric import Rubric
from rewardsvc.core.trajectory import NOTE_FLAGS
from rewardsvc.library.registry import Registry, load_pool, validation_context
from rewardsvc.library.yamlfile import InvalidFile, load_text
from rewardsvc.safety.detectors import FLAGS
from rewardsvc.safety.tamper import TAMPER_FLAGS

ROOT = Path(__file__).resolve().parent.parent
POOL = JudgePool.model_validate(
    {"judges": {"primary": {"model": "m", "base_urls": ["http://127.0.0.1:9/v1"]}}}
)

RUBRIC = """\
id: r
criteria:
  - id: correct
    category: essential
    text: The answer is correct.
    gate: 0.5
  - id: clear
    text: The answer is clear.
    weight: 2
judges:
  - name: primary
    weight: 1
aggregation:
  rule: uwo
  uwo_lambda: 0.5
transforms:
  flag_penalties:
    injection_suspected: 0.5
"""


def problems(text: str) -> list[str]:
    with pytest.raises(InvalidFile) as exc:
        load_text(text, Rubric, "r.yaml", validation_context(POOL))
    return [str(p) for p in exc.value.problems]


def test_the_base_rubric_is_valid() -> None:
    rubric = load_text(RUBRIC, Rubric, "r.yaml", validation_context(POOL))
    assert rubric.transforms.flag_penalties == {"injection_suspected": 0.5}


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf", ".Inf"])
@pytest.mark.parametrize(
    ("field", "line", "path"),
    [
        ("    weight: 2", 9, "criteria[1].weight"),
        ("    gate: 0.5", 6, "criteria[0].gate"),
        ("    weight: 1", 12, "judges[0].weight"),
        ("  uwo_lambda: 0.5", 15, "aggregation.uwo_lambda"),
        ("    injection_suspected: 0.5", 18, "transforms.flag_penalties.injection_suspected"),
    ],
)
def test_non_finite_numbers_are_refused_everywhere(
    value: str, field: str, line: int, path: str
) -> None:
    key = field.split(":")[0]
    found = problems(RUBRIC.replace(field, f"{key}: {value}"))
    assert f"r.yaml:{line}: {path}: Input should be a finite number" in found, found


def test_nan_weight_is_refused_by_the_model_itself() -> None:
    # Inline rubrics reach the model from JSON, where Python's parser accepts NaN.
    # Before: validated, and made every reward 0.0 with status ok.
    with pytest.raises(ValidationError, match="finite number"):
        Rubric.model_validate(
            {
                "id": "r",
                "criteria": [{"id": "a", "text": "Correct.", "weight": float("nan")}],
                "judges": ["primary"],
            }
        )


def test_non_finite_numbers_are_refused_in_the_judge_pool(tmp_path: Path) -> None:
    path = tmp_path / "pool.yaml"
    path.write_text(
        "judges:\n  primary:\n    model: m\n    base_urls: [http://127.0.0.1:9/v1]\n"
        "    timeout_s: .inf\n    sampling:\n      temperature: .nan\n"
    )
    with pytest.raises(InvalidFile) as exc:
        load_pool(path)
    found = [str(p) for p in exc.value.problems]
    assert f"{path}:5: judges.primary.timeout_s: Input should be a finite number" in found
    assert f"{path}:7: judges.primary.sampling.temperature: Input should be a finite number" in (
        found
    )


def test_unknown_flag_is_refused_at_its_line() -> None:
    found = problems(RUBRIC.replace("injection_suspected: 0.5", "injection_suspectd: 0.5"))
    assert len(found) == 1
    assert found[0].startswith(
        "r.yaml:18: transforms.flag_penalties.injection_suspectd: unknown flag "
        "'injection_suspectd', so this penalty would never apply; the detectors raise ["
    )
    assert "'injection_suspected'" in found[0]


def test_negative_penalty_is_refused() -> None:
    found = problems(RUBRIC.replace("injection_suspected: 0.5", "injection_suspected: -0.5"))
    assert found == [
        "r.yaml:18: transforms.flag_penalties.injection_suspected: "
        "Input should be greater than or equal to 0"
    ]


def test_every_detector_flag_may_carry_a_penalty() -> None:
    penalties = "".join(f"    {flag}: 0.25\n" for flag in FLAGS)
    text = RUBRIC.replace("    injection_suspected: 0.5\n", penalties)
    rubric = load_text(text, Rubric, "r.yaml", validation_context(POOL))
    assert set(rubric.transforms.flag_penalties) == set(FLAGS)


def test_without_flag_names_in_the_context_the_check_is_skipped() -> None:
    text = RUBRIC.replace("injection_suspected: 0.5", "someone_elses_flag: 0.5")
    rubric = load_text(text, Rubric, "r.yaml", {"judge_names": {"primary"}})
    assert rubric.transforms.flag_penalties == {"someone_elses_flag": 0.5}


def test_registry_refuses_unknown_flags_and_keeps_the_rest(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(RUBRIC.replace("injection_suspected", "typo_flag"))
    (tmp_path / "good.yaml").write_text(RUBRIC.replace("id: r", "id: good"))
    registry = Registry(tmp_path, POOL)
    assert [e.rubric.id for e in registry.entries()] == ["good"]
    (problem,) = registry.errors()[str(tmp_path / "r.yaml")]
    assert (problem.line, problem.path) == (18, "transforms.flag_penalties.typo_flag")


def test_validation_context_names_flags_and_judges() -> None:
    # The detectors' flags and the trajectory notes (non_text_part, trajectory_cut).
    flags = frozenset(FLAGS) | frozenset(NOTE_FLAGS)
    # judge_unable: what each judge's endpoint cannot do for its method (nothing, here);
    # judge_weights: the pool's weight of each judge (Rubric.judge_weights binds them);
    # judge_vision: the judges that see images (a rubric with media: [image] needs one).
    # A recipe's flag_penalties name the flags its graders raise (the tamper detector's).
    graders = frozenset(TAMPER_FLAGS)
    assert validation_context(POOL) == {
        "flag_names": flags,
        "grader_flag_names": graders,
        "judge_names": frozenset({"primary"}),
        "judge_unable": {},
        "judge_weights": {"primary": 1.0},
        "judge_vision": frozenset(),
    }
    assert validation_context(None) == {"flag_names": flags, "grader_flag_names": graders}


def test_shipped_rubrics_use_known_flags() -> None:
    pool = load_pool(ROOT / "deploy/cpu-judge/judges.yaml")
    context = {**validation_context(pool), "judge_names": None}
    for path in sorted((ROOT / "rubrics").glob("*.yaml")):
        load_text(path.read_text(), Rubric, str(path), context)
