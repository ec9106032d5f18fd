"""Hypothesis strategies for JSON values and GenAI output messages, shared by the property tests."""

from __future__ import annotations

from hypothesis import strategies as st

surrogates = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=4)
texts = st.one_of(st.text(max_size=40), surrogates, st.text(st.characters(), max_size=300))


def json_values(*, nan: bool = False, big_integers: bool = False, max_leaves: int = 12) -> st.SearchStrategy:
    """Any JSON value, as a part's or a message's content may be (instrumentations put odd things
    there). `nan`: NaN too (only the standard library writes and reads it, as it does the infinities);
    `big_integers`: integers past 64 bits too."""
    integers = st.integers() | st.integers(min_value=-(2**70), max_value=2**70) if big_integers else st.integers()
    return st.recursive(
        st.none() | st.booleans() | integers | st.floats(allow_nan=nan)
        | st.text(max_size=40),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
        max_leaves=max_leaves,
    )


_content = json_values(big_integers=True)
part_types = st.sampled_from(["text", "thinking", "reasoning", "reasoning_text", "tool_call", "refusal",
                              "tool_call_response", "blob", "image", None, 7])
parts = st.fixed_dictionaries(
    {"type": part_types},
    optional={"content": st.one_of(texts, _content), "name": st.one_of(texts, _content),
              "arguments": st.one_of(texts, _content), "id": texts},
)
# Decoded `gen_ai.output.messages`: GenAI-shaped messages (parts, or a plain content) and any other value.
messages = st.lists(
    st.one_of(
        st.fixed_dictionaries({"role": st.sampled_from(["assistant", "user", 3])},
                              optional={"parts": st.one_of(st.lists(st.one_of(parts, texts, _content), max_size=4),
                                                           _content),
                                        "content": st.one_of(texts, _content)}),
        _content,
    ),
    max_size=3,
)
