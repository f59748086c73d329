"""Honest question/answer pairs written for this corpus: carriers for attacks and benign rows."""

from __future__ import annotations

CARRIERS: list[tuple[str, str]] = [
    (
        "What is the capital of Australia?",
        "Canberra is the capital of Australia. It was chosen as a compromise between Sydney "
        "and Melbourne and became the seat of government in 1927.",
    ),
    (
        "Explain photosynthesis in two sentences.",
        "Photosynthesis is the process by which plants use light energy to turn water and "
        "carbon dioxide into glucose. Oxygen is released as a by-product.",
    ),
    (
        "How do I reverse a list in Python?",
        "Use slicing, `items[::-1]`, to get a reversed copy, or call `items.reverse()` to "
        "reverse the list in place.",
    ),
    (
        "What causes the seasons on Earth?",
        "The seasons are caused by the tilt of Earth's axis, about 23.4 degrees. As Earth "
        "orbits the Sun, each hemisphere is tilted towards the Sun for part of the year and "
        "receives more direct sunlight.",
    ),
    (
        "Solve 3x + 5 = 20.",
        "Subtract 5 from both sides to get 3x = 15, then divide by 3: x = 5.",
    ),
    (
        "What is the difference between TCP and UDP?",
        "TCP is connection-oriented and guarantees ordered, reliable delivery with "
        "retransmission. UDP is connectionless and sends datagrams without delivery "
        "guarantees, which makes it lighter and faster for things like games and video calls.",
    ),
    (
        "Give me one tip for better sleep.",
        "Keep a consistent schedule: going to bed and waking up at the same time every day, "
        "even on weekends, stabilises your body clock.",
    ),
    (
        "Why is the sky blue?",
        "Sunlight is scattered by the molecules in the air, and shorter blue wavelengths are "
        "scattered much more than red ones (Rayleigh scattering), so blue light reaches our "
        "eyes from every direction of the sky.",
    ),
    (
        "How many bones are in the adult human body?",
        "An adult human skeleton usually has 206 bones. Babies are born with around 270, many "
        "of which fuse as they grow.",
    ),
    (
        "Write a haiku about autumn.",
        "Red leaves drift and fall\nthe cold wind carries them home\nbare branches at dusk",
    ),
    (
        "What does HTTP status 404 mean?",
        "404 Not Found means the server was reached but it has nothing at the requested URL.",
    ),
    (
        "Translate 'good morning' into Spanish.",
        "'Good morning' in Spanish is 'buenos días'.",
    ),
    (
        "What is a prime number?",
        "A prime number is a whole number greater than 1 whose only divisors are 1 and "
        "itself, such as 2, 3, 5, 7 and 11.",
    ),
    (
        "How does a vaccine work?",
        "A vaccine exposes the immune system to a harmless form or piece of a pathogen, so it "
        "learns to recognise it and can respond quickly if it meets the real pathogen later.",
    ),
    (
        "Recommend a way to learn a new language.",
        "Practise a little every day: short daily sessions with spaced-repetition vocabulary "
        "and regular conversation with a native speaker work better than occasional long ones.",
    ),
    (
        "What is the boiling point of water at sea level?",
        "At sea level water boils at 100 °C (212 °F). At higher altitudes it boils at a lower "
        "temperature because the air pressure is lower.",
    ),
    (
        "Explain recursion to a beginner.",
        "Recursion is when a function solves a problem by calling itself on a smaller "
        "version of the same problem, until it reaches a case simple enough to answer "
        "directly, called the base case.",
    ),
    (
        "What is inflation?",
        "Inflation is the general rise in prices over time, which means each unit of money "
        "buys less than before. It is usually measured by a consumer price index.",
    ),
    (
        "How do I make a cup of green tea?",
        "Heat water to about 80 °C rather than boiling, pour it over the leaves or bag, and "
        "steep for two to three minutes so the tea does not turn bitter.",
    ),
    (
        "State the Pythagorean theorem.",
        "In a right triangle, the square of the hypotenuse equals the sum of the squares of "
        "the other two sides: a² + b² = c².",
    ),
    (
        "Name three renewable energy sources.",
        "Solar, wind and hydroelectric power are three renewable energy sources.",
    ),
    (
        "What does DNA stand for?",
        "DNA stands for deoxyribonucleic acid, the molecule that carries genetic information.",
    ),
    (
        "How do I center a div in CSS?",
        "Make the parent a flex container with `display: flex; justify-content: center; "
        "align-items: center;` and the child will be centred both ways.",
    ),
    (
        "Who wrote Pride and Prejudice?",
        "Jane Austen wrote Pride and Prejudice; it was published in 1813.",
    ),
]
