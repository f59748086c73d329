"""The corpus's parsing tasks (written for this project)."""

from __future__ import annotations

from bench.code_tasks.task import Task, task

PARSING_TASKS: tuple[Task, ...] = (
    task(
        "parse_kv",
        """Write `parse_kv(s: str) -> dict[str, str]` reading `key=value` pairs separated by
        `;`: keys and values stripped of surrounding spaces, empty segments ignored, a later
        key replacing an earlier one.""",
        """
        def parse_kv(s):
            out = {}
            for part in s.split(";"):
                if part.strip():
                    key, _, value = part.partition("=")
                    out[key.strip()] = value.strip()
            return out
        """,
        """
        def parse_kv(s):
            out = {}
            for part in s.split(";"):
                if part:
                    key, _, value = part.partition("=")
                    out[key] = value
            return out
        """,
        ("parse_kv('a=1;b=2')", "{'a': '1', 'b': '2'}"),
        ("parse_kv('')", "{}"),
        ("parse_kv('a = 1; b= two ')", "{'a': '1', 'b': 'two'}"),
        ("parse_kv('a=1;;b=2;')", "{'a': '1', 'b': '2'}"),
        ("parse_kv('x=1;x=2')", "{'x': '2'}"),
    ),
    task(
        "balanced",
        """Write `balanced(s: str) -> bool`: whether the brackets `()`, `[]` and `{}` in `s`
        are balanced and properly nested (other characters are ignored).""",
        """
        def balanced(s):
            pairs = {")": "(", "]": "[", "}": "{"}
            stack = []
            for c in s:
                if c in "([{":
                    stack.append(c)
                elif c in pairs:
                    if not stack or stack.pop() != pairs[c]:
                        return False
            return not stack
        """,
        """
        def balanced(s):
            return all(s.count(o) == s.count(c) for o, c in ("()", "[]", "{}"))
        """,
        ("balanced('')", "True"),
        ("balanced('([]{})')", "True"),
        ("balanced('(]')", "False"),
        ("balanced(')(')", "False"),
        ("balanced('([)]')", "False"),
        ("balanced('((')", "False"),
        ("balanced('f(x[1])')", "True"),
    ),
    task(
        "parse_duration",
        """Write `parse_duration(s: str) -> int`: the number of seconds in a duration
        written as hours, minutes and seconds, each optional, in that order (`'1h30m'`,
        `'45s'`, `'2h5s'`).""",
        """
        import re

        def parse_duration(s):
            m = re.fullmatch(r"(?:(\\d+)h)?(?:(\\d+)m)?(?:(\\d+)s)?", s)
            h, mi, se = (int(g) if g else 0 for g in m.groups())
            return h * 3600 + mi * 60 + se
        """,
        """
        import re

        def parse_duration(s):
            m = re.fullmatch(r"(?:(\\d+)h)?(?:(\\d+)m)?(?:(\\d+)s)?", s)
            h, mi, se = (int(g) if g else 0 for g in m.groups())
            return h * 60 + mi * 60 + se
        """,
        ("parse_duration('45s')", "45"),
        ("parse_duration('2m')", "120"),
        ("parse_duration('1h30m')", "5400"),
        ("parse_duration('2h5s')", "7205"),
        ("parse_duration('1m1s')", "61"),
    ),
    task(
        "normalize_path",
        """Write `normalize_path(p: str) -> str` for an absolute POSIX path: repeated
        slashes collapse, `.` parts go, `..` removes the part before it (never above
        `/`), and there is no trailing slash except for `/` itself.""",
        """
        def normalize_path(p):
            parts = []
            for part in p.split("/"):
                if part == "..":
                    if parts:
                        parts.pop()
                elif part and part != ".":
                    parts.append(part)
            return "/" + "/".join(parts)
        """,
        """
        def normalize_path(p):
            parts = [part for part in p.split("/") if part and part != "."]
            return "/" + "/".join(parts)
        """,
        ("normalize_path('/a/b')", "'/a/b'"),
        ("normalize_path('//a///b/')", "'/a/b'"),
        ("normalize_path('/a/./b')", "'/a/b'"),
        ("normalize_path('/a/b/../c')", "'/a/c'"),
        ("normalize_path('/../x')", "'/x'"),
        ("normalize_path('/')", "'/'"),
    ),
    task(
        "parse_csv_line",
        """Write `parse_csv_line(line: str) -> list[str]` splitting one CSV line on commas;
        a field in double quotes may hold commas, and `""` inside it is one quote.""",
        """
        def parse_csv_line(line):
            fields, field, quoted, i = [], "", False, 0
            while i < len(line):
                c = line[i]
                if quoted and c == '"' and line[i + 1 : i + 2] == '"':
                    field += '"'
                    i += 1
                elif c == '"':
                    quoted = not quoted
                elif c == "," and not quoted:
                    fields.append(field)
                    field = ""
                else:
                    field += c
                i += 1
            fields.append(field)
            return fields
        """,
        """
        def parse_csv_line(line):
            return [f.strip('"') for f in line.split(",")]
        """,
        ("parse_csv_line('a,b,c')", "['a', 'b', 'c']"),
        ("parse_csv_line('')", "['']"),
        ("parse_csv_line('\"x\",y')", "['x', 'y']"),
        ("parse_csv_line('\"a,b\",c')", "['a,b', 'c']"),
        ('parse_csv_line(\'"say ""hi""",2\')', "['say \"hi\"', '2']"),
        ("parse_csv_line('a,,b')", "['a', '', 'b']"),
    ),
    task(
        "roman_to_int",
        """Write `roman_to_int(s: str) -> int` reading a Roman numeral (I, V, X, L, C, D, M,
        with the subtractive forms IV, IX, XL, XC, CD, CM).""",
        """
        def roman_to_int(s):
            values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
            total = 0
            for i, c in enumerate(s):
                v = values[c]
                total += -v if i + 1 < len(s) and values[s[i + 1]] > v else v
            return total
        """,
        """
        def roman_to_int(s):
            values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
            return sum(values[c] for c in s)
        """,
        ("roman_to_int('III')", "3"),
        ("roman_to_int('IV')", "4"),
        ("roman_to_int('LVIII')", "58"),
        ("roman_to_int('MCMXCIV')", "1994"),
        ("roman_to_int('MMXXVI')", "2026"),
    ),
    task(
        "int_to_roman",
        """Write `int_to_roman(n: int) -> str` writing 1 <= n <= 3999 as a Roman numeral,
        with the subtractive forms (4 is IV, 900 is CM).""",
        """
        def int_to_roman(n):
            table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"),
                     (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"),
                     (4, "IV"), (1, "I")]
            out = ""
            for value, letters in table:
                while n >= value:
                    out += letters
                    n -= value
            return out
        """,
        """
        def int_to_roman(n):
            table = [(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"),
                     (1, "I")]
            out = ""
            for value, letters in table:
                while n >= value:
                    out += letters
                    n -= value
            return out
        """,
        ("int_to_roman(3)", "'III'"),
        ("int_to_roman(4)", "'IV'"),
        ("int_to_roman(58)", "'LVIII'"),
        ("int_to_roman(1994)", "'MCMXCIV'"),
        ("int_to_roman(2026)", "'MMXXVI'"),
    ),
)
