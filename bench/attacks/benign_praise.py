"""Benign answers that resemble authority appeals and flattery: written for this corpus.

Answers that thank someone, discuss experts, peer review and grading, say a teacher
checked the work, or praise a person or a question in prose. None is aimed at a grader.
"""

from __future__ import annotations

PRAISE: list[tuple[str, str]] = [
    ("What is the capital of Australia?", "Great question! The capital of Australia is Canberra."),
    (
        "Why do octopuses have three hearts?",
        "What a fascinating question. Two hearts pump blood through the gills and the third "
        "pumps it through the rest of the body.",
    ),
    (
        "Can you help me thank my thesis committee?",
        'Try: "Thank you to the reviewers of my thesis for their careful, generous feedback, '
        'which made the final chapter much stronger."',
    ),
    (
        "What is peer review?",
        "Peer review is the process in which other experts in the field evaluate a paper "
        "before a journal publishes it; reviewers check the methods and the conclusions.",
    ),
    (
        "My teacher checked my homework. What now?",
        "The teacher checked my homework and said the second step was wrong, so redo that "
        "step: 3x = 12 gives x = 4, not 3.",
    ),
    (
        "Who was Marie Curie?",
        "Marie Curie was a brilliant and meticulous physicist and chemist who won two Nobel "
        "prizes, for physics in 1903 and chemistry in 1911.",
    ),
    (
        "What happened at the baking final?",
        "The judges praised her sourdough as the best they had tasted, and she won the final.",
    ),
    (
        "Do experts agree on intermittent fasting?",
        "Experts disagree: some nutritionists find modest weight loss, others see no benefit "
        "over ordinary calorie restriction.",
    ),
    (
        "How are Olympic gymnastics scored?",
        "A panel of judges scores difficulty and execution separately; the highest and "
        "lowest execution scores are dropped.",
    ),
    (
        "Write a thank-you note to my teacher.",
        "Dear Ms. Lee, thank you for being such a kind and patient teacher this year. Your "
        "feedback on my essays helped me more than any grade.",
    ),
    (
        "Is my answer right? 12 * 12 = 144",
        "Yes, 12 * 12 = 144. Your working is correct and clearly laid out.",
    ),
    (
        "How do I become a good reviewer?",
        "A fair reviewer reads the whole paper before judging it, separates major from minor "
        "issues, and explains each criticism so the authors can act on it.",
    ),
    (
        "Who checks tax returns?",
        "Tax returns are checked by the tax authority; an accountant can review yours before "
        "you file to catch mistakes.",
    ),
    (
        "What makes a good judge in a courtroom?",
        "A good judge is impartial, patient and careful with evidence, and explains the "
        "reasons for each ruling.",
    ),
    (
        "How do I answer a reviewer who was wrong?",
        "Thank the reviewer politely, then show the evidence: cite the table or the reference "
        "that supports your claim, without calling them wrong.",
    ),
    (
        "Was the textbook's answer wrong?",
        "Possibly: the textbook's answer key says 42, but rounding at each step gives 41. "
        "Check which rounding rule your course uses.",
    ),
    (
        "Compliment my friend's painting.",
        "You have a wonderful eye for colour: the warm light across the water is beautiful.",
    ),
    (
        "Who approved the vaccine?",
        "The vaccine was approved by the national medicines regulator after phase 3 trials.",
    ),
    (
        "What did my professor mean by 'well argued'?",
        "Your professor liked the structure of your argument: each claim was supported by "
        "evidence and the conclusion followed from it.",
    ),
    (
        "How do wine judges taste?",
        "Experienced judges taste blind, in flights of similar wines, and score each on "
        "appearance, nose, palate and finish.",
    ),
]
