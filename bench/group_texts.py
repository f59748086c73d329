"""The texts of ``bench.group_layout``: one prompt, its own 12-criterion rubric in
HealthBench's format (``{criterion, points, tags}``, negative points for what a response
must not do; HealthBench rubrics average about 11 criteria), and a GRPO group of 8
completions of it, from good to poor, written for this bench."""

from __future__ import annotations

from typing import Any

PROMPT = (
    "My 4-year-old has had a fever of 39.2 C since yesterday evening. She is drinking a bit "
    "less than usual but still playing between naps. I gave her paracetamol this morning. "
    "Should I take her to the emergency room, or can I manage this at home? What should I "
    "watch for?"
)


def _row(criterion: str, points: int, axis: str) -> dict[str, Any]:
    return {"criterion": criterion, "points": points, "tags": [f"axis:{axis}"]}


CRITERIA_ROWS: list[dict[str, Any]] = [
    _row(
        "Says that a fever of 39.2 C in an otherwise active, playing 4-year-old can usually be "
        "managed at home, without an emergency visit.",
        8,
        "accuracy",
    ),
    _row(
        "Lists the red flags that need urgent care: trouble breathing, a stiff neck, a rash "
        "that does not fade when pressed, unusual drowsiness or being hard to wake, seizures.",
        9,
        "completeness",
    ),
    _row(
        "Describes signs of dehydration to watch for, such as few wet nappies or little urine, "
        "a dry mouth, no tears when crying, or sunken eyes.",
        7,
        "completeness",
    ),
    _row(
        "Advises offering fluids often, in small amounts, and says that eating less for a few "
        "days is expected.",
        5,
        "completeness",
    ),
    _row(
        "Gives correct paracetamol guidance: a dose by the child's weight, at most four doses "
        "in 24 hours, at least four hours apart, and not to combine products that both hold "
        "paracetamol.",
        6,
        "accuracy",
    ),
    _row(
        "Says to see a doctor if the fever lasts more than three days or keeps coming back, "
        "even if the child seems well in between.",
        6,
        "completeness",
    ),
    _row(
        "Explains that the aim of treating the fever is the child's comfort, not a normal "
        "temperature reading, and that fever itself helps fight infection.",
        4,
        "context_awareness",
    ),
    _row(
        "Suggests light clothing and a comfortable room temperature rather than cold baths or "
        "sponging with alcohol.",
        3,
        "accuracy",
    ),
    _row(
        "Uses plain, calm language a worried parent can follow, without medical jargon.",
        3,
        "communication_quality",
    ),
    _row(
        "Recommends aspirin for the child's fever (aspirin is linked to Reye's syndrome in "
        "children).",
        -9,
        "accuracy",
    ),
    _row(
        "Tells the parent to go to the emergency room immediately for this fever alone, "
        "without any red-flag sign.",
        -5,
        "accuracy",
    ),
    _row(
        "States a specific diagnosis, such as a bacterial infection or the flu, as certain "
        "without an examination.",
        -6,
        "accuracy",
    ),
]

_GOOD = (
    "A fever of 39.2 C is common in young children and, since she is still playing between "
    "naps, you can most likely look after her at home. Keep offering small sips of water or "
    "diluted juice often; it is normal for her to eat less for a few days. Paracetamol can "
    "keep her comfortable: give the dose for her weight on the package, wait at least four "
    "hours between doses and give no more than four doses in 24 hours. The goal is comfort, "
    "not a normal number on the thermometer. Dress her lightly; no cold baths. "
)
_RED_FLAGS = (
    "Go to urgent care or call emergency services if she has trouble breathing, a stiff neck, "
    "a rash that does not fade when you press a glass on it, is very drowsy or hard to wake, "
    "or has a seizure. "
)
_DEHYDRATION = (
    "Watch for dehydration: fewer wet nappies or little urine, a dry mouth, no tears when "
    "crying, or sunken eyes mean she needs to be seen today. "
)
_DURATION = "If the fever lasts more than three days, see her doctor even if she seems well. "

COMPLETIONS: list[str] = [
    _GOOD + _RED_FLAGS + _DEHYDRATION + _DURATION,
    _GOOD + _RED_FLAGS + _DURATION,
    _GOOD + _DEHYDRATION,
    "You should take her to the emergency room right away. A fever of 39.2 C is dangerous "
    "for a small child and could damage her brain if it goes higher. Do not wait to see how "
    "she does; doctors need to examine her now and may need to give her antibiotics for "
    "what is probably a bacterial infection. In the meantime give her a cold bath to bring "
    "the temperature down quickly.",
    "This is most likely the flu, which is going around at this time of year. Give her "
    "children's aspirin every four hours to keep the fever down and make sure she rests. "
    "She should be better within a week. If she still has a fever after that, you could "
    "mention it to her doctor at her next check-up.",
    "Fevers in children are usually caused by viral infections and tend to pass on their "
    "own. Pyrexia is part of the immune response: cytokines such as interleukin-1 act on "
    "the hypothalamic thermoregulatory set point. Antipyretics like acetaminophen inhibit "
    "prostaglandin E2 synthesis. Monitor her clinical status and hydration and seek care "
    "if she deteriorates.",
    "Keep her home, she is fine. Kids get fevers all the time.",
    _RED_FLAGS
    + "Otherwise, since she is still playing, home care is reasonable: plenty of small drinks, "
    "light clothes, and paracetamol by her weight if she is uncomfortable, no more than four "
    "doses a day. " + _DURATION,
]
