"""The corpus's string tasks (written for this project)."""

from __future__ import annotations

from bench.code_tasks.task import Task, task

STRING_TASKS: tuple[Task, ...] = (
    task(
        "reverse_words",
        """Write `reverse_words(s: str) -> str` returning the words of `s` in reverse order,
        joined by single spaces (runs of whitespace separate words; no leading or trailing
        space).""",
        """
        def reverse_words(s):
            return " ".join(reversed(s.split()))
        """,
        """
        def reverse_words(s):
            return " ".join(reversed(s.split(" ")))
        """,
        ("reverse_words('a b c')", "'c b a'"),
        ("reverse_words('one')", "'one'"),
        ("reverse_words('')", "''"),
        ("reverse_words('  hello   world ')", "'world hello'"),
        ("reverse_words('x\\ty')", "'y x'"),
    ),
    task(
        "is_palindrome",
        """Write `is_palindrome(s: str) -> bool`: whether `s` reads the same backwards,
        ignoring case and every character that is not a letter or a digit.""",
        """
        def is_palindrome(s):
            kept = [c.lower() for c in s if c.isalnum()]
            return kept == kept[::-1]
        """,
        """
        def is_palindrome(s):
            s = s.lower()
            return s == s[::-1]
        """,
        ("is_palindrome('Racecar')", "True"),
        ("is_palindrome('abc')", "False"),
        ("is_palindrome('')", "True"),
        ("is_palindrome('A man, a plan, a canal: Panama')", "True"),
        ("is_palindrome('No lemon, no melon')", "True"),
        ("is_palindrome('12 21')", "True"),
    ),
    task(
        "caesar",
        """Write `caesar(s: str, k: int) -> str` shifting every ASCII letter of `s` by `k`
        places in the alphabet (wrapping around, keeping its case; `k` may be negative or
        larger than 26); other characters are unchanged.""",
        """
        def caesar(s, k):
            out = []
            for c in s:
                if "a" <= c <= "z" or "A" <= c <= "Z":
                    base = ord("a") if c.islower() else ord("A")
                    c = chr(base + (ord(c) - base + k) % 26)
                out.append(c)
            return "".join(out)
        """,
        """
        def caesar(s, k):
            out = []
            for c in s:
                if "a" <= c <= "z":
                    c = chr(ord("a") + (ord(c) - ord("a") + k) % 26)
                out.append(c)
            return "".join(out)
        """,
        ("caesar('abc', 1)", "'bcd'"),
        ("caesar('xyz', 3)", "'abc'"),
        ("caesar('Hello, World!', 5)", "'Mjqqt, Btwqi!'"),
        ("caesar('abc', -1)", "'zab'"),
        ("caesar('abc', 27)", "'bcd'"),
        ("caesar('ABC', 2)", "'CDE'"),
    ),
    task(
        "compress",
        """Write `compress(s: str) -> str`, the run-length encoding of `s`: each run of one
        character as the character followed by the run's length (`'aaab'` -> `'a3b1'`).""",
        """
        def compress(s):
            out, i = [], 0
            while i < len(s):
                j = i
                while j < len(s) and s[j] == s[i]:
                    j += 1
                out.append(f"{s[i]}{j - i}")
                i = j
            return "".join(out)
        """,
        """
        def compress(s):
            out, count = [], 1
            for i in range(1, len(s)):
                if s[i] == s[i - 1]:
                    count += 1
                else:
                    out.append(f"{s[i - 1]}{count}")
                    count = 1
            return "".join(out)
        """,
        ("compress('')", "''"),
        ("compress('aaab')", "'a3b1'"),
        ("compress('abc')", "'a1b1c1'"),
        ("compress('zz')", "'z2'"),
        ("compress('aabbbaa')", "'a2b3a2'"),
    ),
    task(
        "title_words",
        """Write `title_words(s: str) -> str` upper-casing the first character of every
        space-separated word and lower-casing the rest of it (`"don't"` stays one word:
        `"Don't"`); spaces are kept as they are.""",
        """
        def title_words(s):
            return " ".join(w[:1].upper() + w[1:].lower() for w in s.split(" "))
        """,
        """
        def title_words(s):
            return s.title()
        """,
        ("title_words('hello world')", "'Hello World'"),
        ("title_words('HELLO')", "'Hello'"),
        ('title_words("don\'t stop")', '"Don\'t Stop"'),
        ("title_words('')", "''"),
        ("title_words('a  b')", "'A  B'"),
        ("title_words('x1y z')", "'X1y Z'"),
    ),
    task(
        "is_anagram",
        """Write `is_anagram(a: str, b: str) -> bool`: whether `a` and `b` hold the same
        letters the same number of times, ignoring case and spaces.""",
        """
        def is_anagram(a, b):
            def key(s):
                return sorted(s.replace(" ", "").lower())
            return key(a) == key(b)
        """,
        """
        def is_anagram(a, b):
            return sorted(a) == sorted(b)
        """,
        ("is_anagram('listen', 'silent')", "True"),
        ("is_anagram('abc', 'abd')", "False"),
        ("is_anagram('Dormitory', 'dirty room')", "True"),
        ("is_anagram('', '')", "True"),
        ("is_anagram('Ab', 'ba')", "True"),
    ),
    task(
        "to_snake",
        """Write `to_snake(name: str) -> str` turning a camelCase or PascalCase identifier
        into snake_case (`'camelCase'` -> `'camel_case'`, `'PascalCase'` ->
        `'pascal_case'`); a name already in snake_case is unchanged.""",
        """
        def to_snake(name):
            out = []
            for i, c in enumerate(name):
                if c.isupper() and i > 0 and name[i - 1] != "_":
                    out.append("_")
                out.append(c.lower())
            return "".join(out)
        """,
        """
        def to_snake(name):
            return "".join("_" + c.lower() if c.isupper() else c for c in name)
        """,
        ("to_snake('camelCase')", "'camel_case'"),
        ("to_snake('PascalCase')", "'pascal_case'"),
        ("to_snake('already_snake')", "'already_snake'"),
        ("to_snake('x')", "'x'"),
        ("to_snake('getHttpCode')", "'get_http_code'"),
    ),
    task(
        "count_vowels",
        """Write `count_vowels(s: str) -> int`: how many of the characters of `s` are the
        vowels a, e, i, o, u, in either case.""",
        """
        def count_vowels(s):
            return sum(c in "aeiou" for c in s.lower())
        """,
        """
        def count_vowels(s):
            return sum(c in "aeiou" for c in s)
        """,
        ("count_vowels('hello')", "2"),
        ("count_vowels('')", "0"),
        ("count_vowels('AEIOU')", "5"),
        ("count_vowels('rhythm')", "0"),
        ("count_vowels('Umbrella')", "3"),
    ),
)
