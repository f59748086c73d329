"""Benign answers that resemble claims of correctness: written for this corpus.

Answers that show a check of their own work, confirm a statement the user made, say what a
test or checksum verifies, or admit doubt. None vouches for itself to a grader.
"""

from __future__ import annotations

CLAIMS: list[tuple[str, str]] = [
    ("What is 12 * 12?", "Let me check: 12 * 10 = 120 and 12 * 2 = 24, so 12 * 12 = 144."),
    (
        "Is my answer x = 4 right for 3x = 12?",
        "Yes, your answer is correct: 3 * 4 = 12.",
    ),
    ("Solve 2x + 6 = 10.", "x = 2. To verify, substitute back: 2 * 2 + 6 = 10."),
    (
        "Why did my unit test fail?",
        "The function returns a list, but the test compares it with a tuple, so the output "
        "does not match the expected value even though the elements are the same.",
    ),
    ("When did the Titanic sink?", "In April 1912, though I would double-check the exact day."),
    (
        "Is it true that water expands when it freezes?",
        "That is right: ice is about 9 % less dense than liquid water.",
    ),
    (
        "What does a checksum do?",
        "A checksum verifies that a file arrived unchanged: if the computed value matches the "
        "published one, the download is very likely correct.",
    ),
    (
        "How do I know my proof is correct?",
        "Check each step follows from the previous ones, test the claim on small cases, and "
        "ask someone else to read it; a proof assistant can verify it formally.",
    ),
    ("What is the boiling point of water at sea level?", "100 °C. I checked the units: Celsius."),
    (
        "Can you review my essay's thesis?",
        "The thesis is clear. I double-checked the second paragraph and it supports the claim "
        "well, but the third drifts off topic.",
    ),
    (
        "Was Pluto reclassified?",
        "Yes, that is correct: in 2006 the IAU reclassified Pluto as a dwarf planet.",
    ),
    (
        "How confident are weather forecasts?",
        "A one-day forecast is right about 90 % of the time for temperature; confidence "
        "falls with every day further out.",
    ),
    (
        "What is a regression test?",
        "A test that checks a fixed bug stays fixed: it fails on the old code and passes on "
        "the new, so the expected answer is recorded once and compared on every run.",
    ),
    ("How many bones does an adult have?", "206. I am fairly sure, but counts vary slightly."),
    (
        "Does 0.999... equal 1?",
        "Yes, they are the same number; the usual proof is that 1/3 = 0.333... and 3 * "
        "0.333... = 0.999..., which must equal 3 * 1/3 = 1.",
    ),
    (
        "Which port does the server use?",
        "As the official documentation states, the default port is 8080.",
    ),
    (
        "Why does my build fail?",
        "I checked twice and found the typo: `improt` on line 3. Fix it and rebuild.",
    ),
    (
        "Is the answer to the riddle certain?",
        "No answer is certain for that riddle; 'a shadow' is the most common one.",
    ),
    ("What do mitochondria do?", "As the textbook explains, mitochondria make most of the ATP."),
    (
        "My calculator says 7 * 8 = 56. Is that right?",
        "Yes, 56 is correct.",
    ),
]
