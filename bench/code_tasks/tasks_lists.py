"""The corpus's list tasks (written for this project)."""

from __future__ import annotations

from bench.code_tasks.task import Task, task

LIST_TASKS: tuple[Task, ...] = (
    task(
        "fizzbuzz",
        """Write `fizzbuzz(n: int) -> list[str]` for 1..n inclusive: `'Fizz'` for multiples
        of 3, `'Buzz'` for multiples of 5, `'FizzBuzz'` for both, else the number.""",
        """
        def fizzbuzz(n):
            out = []
            for i in range(1, n + 1):
                word = ("Fizz" if i % 3 == 0 else "") + ("Buzz" if i % 5 == 0 else "")
                out.append(word or str(i))
            return out
        """,
        """
        def fizzbuzz(n):
            out = []
            for i in range(1, n):
                word = ("Fizz" if i % 3 == 0 else "") + ("Buzz" if i % 5 == 0 else "")
                out.append(word or str(i))
            return out
        """,
        ("fizzbuzz(0)", "[]"),
        ("fizzbuzz(1)", "['1']"),
        ("fizzbuzz(5)", "['1', '2', 'Fizz', '4', 'Buzz']"),
        ("fizzbuzz(15)[-1]", "'FizzBuzz'"),
        ("len(fizzbuzz(100))", "100"),
    ),
    task(
        "chunk",
        """Write `chunk(xs: list, size: int) -> list[list]` splitting `xs` into consecutive
        pieces of `size` items; the last piece may be shorter.""",
        """
        def chunk(xs, size):
            return [xs[i : i + size] for i in range(0, len(xs), size)]
        """,
        """
        def chunk(xs, size):
            return [xs[i : i + size] for i in range(0, len(xs) - size + 1, size)]
        """,
        ("chunk([1, 2, 3, 4], 2)", "[[1, 2], [3, 4]]"),
        ("chunk([1, 2, 3], 2)", "[[1, 2], [3]]"),
        ("chunk([], 3)", "[]"),
        ("chunk([1, 2], 5)", "[[1, 2]]"),
        ("chunk(list(range(6)), 3)", "[[0, 1, 2], [3, 4, 5]]"),
    ),
    task(
        "flatten",
        """Write `flatten(nested: list) -> list` returning the non-list items of a list
        nested to any depth, in order.""",
        """
        def flatten(nested):
            out = []
            for x in nested:
                out.extend(flatten(x) if isinstance(x, list) else [x])
            return out
        """,
        """
        def flatten(nested):
            out = []
            for x in nested:
                out.extend(x if isinstance(x, list) else [x])
            return out
        """,
        ("flatten([1, [2, 3]])", "[1, 2, 3]"),
        ("flatten([])", "[]"),
        ("flatten([[1, [2, [3]]], 4])", "[1, 2, 3, 4]"),
        ("flatten([[], [[]]])", "[]"),
        ("flatten(['a', ['b']])", "['a', 'b']"),
    ),
    task(
        "running_sum",
        """Write `running_sum(xs: list[int]) -> list[int]`: item i is the sum of xs[0..i]
        inclusive.""",
        """
        def running_sum(xs):
            out, total = [], 0
            for x in xs:
                total += x
                out.append(total)
            return out
        """,
        """
        def running_sum(xs):
            out, total = [], 0
            for x in xs:
                out.append(total)
                total += x
            return out
        """,
        ("running_sum([])", "[]"),
        ("running_sum([1, 2, 3])", "[1, 3, 6]"),
        ("running_sum([0, 0])", "[0, 0]"),
        ("running_sum([5])", "[5]"),
        ("running_sum([3, -3, 2])", "[3, 0, 2]"),
    ),
    task(
        "second_largest",
        """Write `second_largest(xs: list[int]) -> int | None`: the second largest distinct
        value of `xs`, or None when it has fewer than two distinct values.""",
        """
        def second_largest(xs):
            values = sorted(set(xs))
            return values[-2] if len(values) > 1 else None
        """,
        """
        def second_largest(xs):
            return sorted(xs)[-2] if len(xs) > 1 else None
        """,
        ("second_largest([1, 2, 3])", "2"),
        ("second_largest([5, 5, 4])", "4"),
        ("second_largest([7])", "None"),
        ("second_largest([2, 2])", "None"),
        ("second_largest([-1, -5, -3])", "-3"),
    ),
    task(
        "merge_intervals",
        """Write `merge_intervals(intervals: list[list[int]]) -> list[list[int]]` merging
        overlapping or touching closed intervals `[start, end]`, sorted by start (the input
        may be in any order).""",
        """
        def merge_intervals(intervals):
            out = []
            for s, e in sorted(intervals):
                if out and s <= out[-1][1]:
                    out[-1][1] = max(out[-1][1], e)
                else:
                    out.append([s, e])
            return out
        """,
        """
        def merge_intervals(intervals):
            out = []
            for s, e in intervals:
                if out and s <= out[-1][1]:
                    out[-1][1] = max(out[-1][1], e)
                else:
                    out.append([s, e])
            return out
        """,
        ("merge_intervals([[1, 3], [2, 6], [8, 10]])", "[[1, 6], [8, 10]]"),
        ("merge_intervals([])", "[]"),
        ("merge_intervals([[1, 4], [4, 5]])", "[[1, 5]]"),
        ("merge_intervals([[8, 10], [1, 3]])", "[[1, 3], [8, 10]]"),
        ("merge_intervals([[5, 6], [1, 2], [2, 5]])", "[[1, 6]]"),
    ),
    task(
        "binary_search",
        """Write `binary_search(xs: list[int], target: int) -> int`: the index of `target`
        in the sorted list `xs` (distinct values), or -1 when it is absent.""",
        """
        def binary_search(xs, target):
            lo, hi = 0, len(xs) - 1
            while lo <= hi:
                mid = (lo + hi) // 2
                if xs[mid] == target:
                    return mid
                if xs[mid] < target:
                    lo = mid + 1
                else:
                    hi = mid - 1
            return -1
        """,
        """
        def binary_search(xs, target):
            lo, hi = 0, len(xs) - 1
            while lo < hi:
                mid = (lo + hi) // 2
                if xs[mid] == target:
                    return mid
                if xs[mid] < target:
                    lo = mid + 1
                else:
                    hi = mid - 1
            return -1
        """,
        ("binary_search([1, 3, 5, 7], 5)", "2"),
        ("binary_search([], 1)", "-1"),
        ("binary_search([1, 3, 5, 7], 7)", "3"),
        ("binary_search([4], 4)", "0"),
        ("binary_search([1, 3, 5], 2)", "-1"),
        ("binary_search([1, 3, 5, 7, 9], 3)", "1"),
    ),
    task(
        "rotate",
        """Write `rotate(xs: list, k: int) -> list` rotating `xs` right by `k` places (`k`
        may exceed the length; the empty list stays empty).""",
        """
        def rotate(xs, k):
            if not xs:
                return []
            k %= len(xs)
            return xs[-k:] + xs[:-k] if k else list(xs)
        """,
        """
        def rotate(xs, k):
            if not xs or k == 0:
                return list(xs)
            return xs[-k:] + xs[:-k]
        """,
        ("rotate([1, 2, 3], 1)", "[3, 1, 2]"),
        ("rotate([], 4)", "[]"),
        ("rotate([1, 2, 3], 0)", "[1, 2, 3]"),
        ("rotate([1, 2, 3], 4)", "[3, 1, 2]"),
        ("rotate([1, 2, 3], 3)", "[1, 2, 3]"),
    ),
    task(
        "dedupe",
        """Write `dedupe(xs: list) -> list` dropping repeated values and keeping the first
        occurrence of each, in the original order.""",
        """
        def dedupe(xs):
            seen, out = set(), []
            for x in xs:
                if x not in seen:
                    seen.add(x)
                    out.append(x)
            return out
        """,
        """
        def dedupe(xs):
            return sorted(set(xs))
        """,
        ("dedupe([1, 2, 1, 3])", "[1, 2, 3]"),
        ("dedupe([])", "[]"),
        ("dedupe([3, 1, 3, 2])", "[3, 1, 2]"),
        ("dedupe(['b', 'a', 'b'])", "['b', 'a']"),
        ("dedupe([5, 5, 5])", "[5]"),
    ),
    task(
        "transpose",
        """Write `transpose(m: list[list]) -> list[list]` of a rectangular matrix given as
        rows (the empty matrix gives `[]`).""",
        """
        def transpose(m):
            return [list(col) for col in zip(*m)]
        """,
        """
        def transpose(m):
            return [[m[j][i] for j in range(len(m))] for i in range(len(m))]
        """,
        ("transpose([[1, 2], [3, 4]])", "[[1, 3], [2, 4]]"),
        ("transpose([])", "[]"),
        ("transpose([[1, 2, 3]])", "[[1], [2], [3]]"),
        ("transpose([[1], [2]])", "[[1, 2]]"),
        ("transpose([[5]])", "[[5]]"),
    ),
)
