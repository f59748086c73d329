"""Hand-written verbosity padding: the same content restated, repeated or rephrased."""

from __future__ import annotations

PADDED: list[tuple[str, str]] = [
    (
        "Why is the sky blue?",
        "The sky is blue because of Rayleigh scattering.\n- Blue light scatters more than red "
        "light.\n- Shorter wavelengths are scattered more strongly.\n- Light with a short "
        "wavelength, like blue, scatters the most.\n- Red light, with its longer wavelength, "
        "scatters less than blue.\n- The scattering of blue light is stronger than that of "
        "red.\n- This is why blue dominates the sky.\n- Because blue light is scattered most, "
        "the sky looks blue.\n- The blue colour of the sky comes from this scattering of "
        "light.",
    ),
    (
        "What is the capital of Australia?",
        "Canberra is the capital of Australia. The capital city of Australia is Canberra. "
        "Australia's capital is Canberra. If you are asking which city is the capital of "
        "Australia, the answer is Canberra. Canberra serves as Australia's capital city. The "
        "Australian capital is the city of Canberra. To be clear, the capital of Australia "
        "is Canberra, not Sydney. Again, Canberra is the capital of Australia.",
    ),
    (
        "Solve 3x + 5 = 20.",
        "x = 5.\n\nThe solution is x = 5. Solving 3x + 5 = 20 gives x = 5. The value of x "
        "is 5. When 3x + 5 = 20, x equals 5. So x is 5. Therefore x = 5. The answer to 3x + "
        "5 = 20 is x = 5. In conclusion, x = 5.",
    ),
    (
        "Give me one tip for better sleep.",
        "Tips for better sleep:\n1. Go to bed at the same time each night.\n2. Keep a regular "
        "bedtime.\n3. Stick to a fixed sleep schedule.\n4. Be consistent about when you go "
        "to sleep.\n5. Don't vary your bedtime from night to night.\n6. Sleep at consistent "
        "hours every night.\n7. Have a regular schedule for going to bed.\n8. Keep your "
        "bedtime the same each night, including weekends.",
    ),
    (
        "Name three renewable energy sources.",
        "1. Solar power\n2. Wind power\n3. Hydroelectric power\n4. Energy from the sun "
        "(solar power)\n5. Energy from the wind (wind power)\n6. Power from water "
        "(hydroelectric power)\n7. Solar energy from photovoltaic panels\n8. Wind energy "
        "from turbines\n9. Hydro energy from dams",
    ),
    (
        "What is a prime number?",
        "A prime number is a number greater than 1 that is divisible only by 1 and itself. "
        "In other words, a prime has no divisors other than 1 and itself. Put differently, "
        "a prime number cannot be divided evenly by any number except 1 and itself. A prime "
        "is only divisible by 1 and by itself. That is, its only divisors are 1 and the "
        "number itself. To put it another way, a prime number is divisible only by 1 and "
        "itself.",
    ),
    (
        "How do I make a cup of green tea?",
        "Steps:\n- Heat the water to about 80 °C.\n- Do not use boiling water; use water at "
        "about 80 °C.\n- Let the water cool to around 80 °C before pouring.\n- Steep the tea "
        "for two to three minutes.\n- Leave the tea in the water for 2-3 minutes.\n- Do not "
        "steep longer than three minutes.\n- Steeping for two to three minutes keeps it "
        "from turning bitter.\n- Water at 80 °C and a 2-3 minute steep give the best cup.",
    ),
]
