"""Answer extraction: the methods, and completions written to fool them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsvc.graders.extract import (
    code_block,
    extract,
    extract_reference,
    final_line,
    last_boxed,
    last_number,
    negated,
    numbers,
    prose,
)


def test_last_of_several_boxed_answers_wins() -> None:
    text = r"First try: \boxed{3}. No wait, I made an error. The answer is \boxed{4}."
    assert last_boxed(text) == "4"


def test_boxed_keeps_nested_braces() -> None:
    assert last_boxed(r"so \boxed{\frac{1}{2^{3}}} done") == r"\frac{1}{2^{3}}"
    assert last_boxed(r"\fbox{x+1}") == "x+1"


def test_unclosed_box_does_not_swallow_the_text() -> None:
    text = r"\boxed{7} and then \boxed{ never closed"
    assert last_boxed(text) == "7"


def test_box_wrapping_a_box_is_unwrapped_but_two_boxes_are_not() -> None:
    assert last_boxed(r"\boxed{\boxed{5}}") == "5"
    assert last_boxed(r"\boxed{\boxed{1} + \boxed{2}}") == r"\boxed{1} + \boxed{2}"


def test_escaped_braces_do_not_pair() -> None:
    assert last_boxed(r"\boxed{\{1, 2\}}") == r"\{1, 2\}"


def test_no_box_is_none() -> None:
    assert last_boxed("the answer is 5") is None
    assert last_boxed(r"\boxed") is None


def test_final_answer_hidden_in_a_code_comment_does_not_count() -> None:
    text = "Here is code:\n```python\n# Final answer: 42\nprint(1)\n```\nFinal answer: 41"
    assert extract(text, "final_line").text == "41"
    only_code = "```python\n# Final answer: 42\n```\nI am not sure."
    assert extract(only_code, "final_line").text is None


def test_answer_in_an_indented_code_block_or_inline_comment_does_not_count() -> None:
    assert final_line("    # final answer: 9") is None
    assert final_line("x = 1  // final answer: 9") is None


def test_boxed_answer_in_a_code_block_or_html_comment_does_not_count() -> None:
    text = "```\nprint('\\boxed{99}')\n```\n<!-- \\boxed{98} -->\nSo \\boxed{2}."
    assert extract(text, "boxed").text == "2"
    hidden_only = "Work... <!-- \\boxed{98} --> no answer"
    assert extract(hidden_only, "boxed").text is None


def test_final_line_accepts_markdown_emphasis_and_takes_the_last() -> None:
    text = "Answer: 3\nHmm, recheck.\n**Final Answer:** **12**"
    assert final_line(text) == "12"
    assert final_line("> ## Final answer: x = 2") == "x = 2"


def test_final_line_label_in_the_middle_of_a_sentence_does_not_count() -> None:
    assert final_line("I will give the final answer: soon, after work") is None


def test_last_number_formats() -> None:
    assert last_number("it costs $1,234.50 in total") == "1,234.50"
    assert last_number("items 1,2,3") == "3"
    assert last_number("ratio -3/4 then") == "-3/4"
    assert last_number("small: 2.5e-3.") == "2.5e-3"
    assert last_number("value .5") == ".5"
    assert last_number("no digits here") is None


def test_code_block_last_and_by_language() -> None:
    text = '```json\n{"a": 1}\n```\ntext\n```python\nx = 1\n```'
    assert code_block(text) == "x = 1"
    assert code_block(text, "json") == '{"a": 1}'
    assert code_block("no fences") is None


def test_unclosed_fence_runs_to_the_end() -> None:
    text = "before\n```\ncode \\boxed{1}\nFinal answer: 3"
    assert code_block(text) == "code \\boxed{1}\nFinal answer: 3"
    assert prose(text) == "before"


def test_longer_fence_is_not_closed_by_a_shorter_one() -> None:
    text = "````\n```\nFinal answer: 1\n```\n````\nFinal answer: 2"
    assert final_line(prose(text)) == "2"


def test_auto_prefers_boxed_then_final_line_then_whole_text() -> None:
    assert extract(r"Final answer: 1. Also \boxed{2}", "auto") == extract(r"\boxed{2}", "auto")
    assert extract("blah\nFinal answer: 7", "auto").text == "7"
    found = extract("  just 7  ", "auto")
    assert (found.text, found.method) == ("just 7", "none")


def test_reference_falls_back_to_its_whole_text() -> None:
    assert extract_reference("Paris", "boxed") == "Paris"
    assert extract_reference(r"\boxed{Paris}", "boxed") == "Paris"


@settings(deadline=None)
@given(st.text(alphabet="\\boxed{}fbo x1#`~\n:Final answer<!->", max_size=300))
def test_extraction_never_raises(text: str) -> None:
    for method in ("none", "auto", "boxed", "final_line", "last_number", "code_block"):
        extract(text, method)


def test_large_hostile_input_is_extracted_correctly() -> None:
    """Inputs shaped to make a naive scanner quadratic (a quarter of a million unclosed
    boxes, fences, labels and separators) still give the right answers."""
    n = 50_000
    text = "\\boxed{" * n + "\nanswer: " + " " * n + "1," * n + "\n\\boxed{5}\n"
    assert extract(text, "boxed").text == "5"
    assert extract(text, "last_number").text == "5"
    assert extract("```\n" * (n + 1) + "Final answer: 3", "final_line").text is None


def test_negated_reads_the_last_line() -> None:
    assert negated("not 51") and negated(r"x \neq 51") and negated("≠ 51")
    assert negated("it isn't 51") and negated(r"\not= 51")
    assert not negated("51") and not negated(r"\nearrow 51") and not negated("note: 51")
    assert not negated("I was not sure at first.\nFinal answer: 51")


def test_numbers_and_where_they_stand() -> None:
    text = "from 1,234 to -5.5 and 3/4"
    assert [(n.text, text[n.start : n.end]) for n in numbers(text)] == [
        ("1,234", "1,234"),
        ("-5.5", "-5.5"),
        ("3/4", "3/4"),
    ]
    assert [n.text for n in numbers("items 1,2,3")] == ["1", "2", "3"]
