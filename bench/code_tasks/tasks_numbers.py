"""The corpus's number and dict tasks (written for this project)."""

from __future__ import annotations

from bench.code_tasks.task import Task, task

NUMBER_TASKS: tuple[Task, ...] = (
    task(
        "median",
        """Write `median(xs: list[float]) -> float` of a non-empty list: the middle value,
        or the mean of the two middle values when the length is even.""",
        """
        def median(xs):
            s = sorted(xs)
            mid = len(s) // 2
            return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
        """,
        """
        def median(xs):
            s = sorted(xs)
            return s[len(s) // 2]
        """,
        ("median([3, 1, 2])", "2"),
        ("median([4])", "4"),
        ("median([1, 2, 3, 4])", "2.5"),
        ("median([5, 1])", "3"),
        ("median([7, 7, 7, 7])", "7"),
    ),
    task(
        "gcd",
        """Write `gcd(a: int, b: int) -> int`, the greatest common divisor of two integers
        (either may be negative or zero), never negative; gcd(0, 0) is 0.""",
        """
        def gcd(a, b):
            a, b = abs(a), abs(b)
            while b:
                a, b = b, a % b
            return a
        """,
        """
        def gcd(a, b):
            while b:
                a, b = b, a % b
            return a
        """,
        ("gcd(12, 18)", "6"),
        ("gcd(7, 5)", "1"),
        ("gcd(0, 9)", "9"),
        ("gcd(-4, 6)", "2"),
        ("gcd(0, 0)", "0"),
        ("gcd(-8, -12)", "4"),
    ),
    task(
        "is_prime",
        """Write `is_prime(n: int) -> bool`: whether the integer `n` is prime.""",
        """
        def is_prime(n):
            if n < 2:
                return False
            i = 2
            while i * i <= n:
                if n % i == 0:
                    return False
                i += 1
            return True
        """,
        """
        def is_prime(n):
            if n < 2:
                return False
            for i in range(2, int(n ** 0.5)):
                if n % i == 0:
                    return False
            return True
        """,
        ("is_prime(2)", "True"),
        ("is_prime(1)", "False"),
        ("is_prime(17)", "True"),
        ("is_prime(9)", "False"),
        ("is_prime(25)", "False"),
        ("is_prime(-7)", "False"),
        ("is_prime(97)", "True"),
    ),
    task(
        "digit_sum",
        """Write `digit_sum(n: int) -> int`, the sum of the decimal digits of `n` (the sign
        of a negative `n` is ignored).""",
        """
        def digit_sum(n):
            return sum(int(d) for d in str(abs(n)))
        """,
        """
        def digit_sum(n):
            return sum(int(d) for d in str(n) if d != "-") if n > 0 else 0
        """,
        ("digit_sum(123)", "6"),
        ("digit_sum(0)", "0"),
        ("digit_sum(-45)", "9"),
        ("digit_sum(9999)", "36"),
        ("digit_sum(-1)", "1"),
    ),
    task(
        "mode",
        """Write `mode(xs: list[int]) -> int` of a non-empty list: its most frequent value,
        the smallest of them on a tie.""",
        """
        def mode(xs):
            counts = {}
            for x in xs:
                counts[x] = counts.get(x, 0) + 1
            return min(counts, key=lambda x: (-counts[x], x))
        """,
        """
        def mode(xs):
            return max(xs, key=xs.count)
        """,
        ("mode([1, 2, 2])", "2"),
        ("mode([4])", "4"),
        ("mode([3, 1, 3, 1])", "1"),
        ("mode([5, 5, 2, 2, 9])", "2"),
        ("mode([-1, -1, 0])", "-1"),
    ),
    task(
        "word_count",
        """Write `word_count(text: str) -> dict[str, int]` counting the words of `text`
        (split on whitespace), case-insensitively: keys are lower-case.""",
        """
        def word_count(text):
            counts = {}
            for w in text.lower().split():
                counts[w] = counts.get(w, 0) + 1
            return counts
        """,
        """
        def word_count(text):
            counts = {}
            for w in text.split():
                counts[w] = counts.get(w, 0) + 1
            return counts
        """,
        ("word_count('a b a')", "{'a': 2, 'b': 1}"),
        ("word_count('')", "{}"),
        ("word_count('The the THE')", "{'the': 3}"),
        ("word_count('x\\ny  x')", "{'x': 2, 'y': 1}"),
        ("word_count('Go go')", "{'go': 2}"),
    ),
    task(
        "invert_dict",
        """Write `invert_dict(d: dict) -> dict` mapping each value of `d` to the sorted list
        of the keys that have it.""",
        """
        def invert_dict(d):
            out = {}
            for k, v in d.items():
                out.setdefault(v, []).append(k)
            return {v: sorted(ks) for v, ks in out.items()}
        """,
        """
        def invert_dict(d):
            return {v: [k] for k, v in d.items()}
        """,
        ("invert_dict({'a': 1, 'b': 2})", "{1: ['a'], 2: ['b']}"),
        ("invert_dict({})", "{}"),
        ("invert_dict({'b': 1, 'a': 1})", "{1: ['a', 'b']}"),
        ("invert_dict({'x': 0, 'y': 0, 'z': 1})", "{0: ['x', 'y'], 1: ['z']}"),
    ),
)
