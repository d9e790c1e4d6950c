"""Failure messages as the end of a run prints them."""

from __future__ import annotations


def test_clip_cuts_at_a_word_and_says_so() -> None:
    from agentjudge.models.failures import clip

    text = (
        "could not connect to https://api.openai.com/v1 (the openai default); check the endpoint with --probe"
    )
    assert clip(text, 500) == text
    cut = clip(text, 60)
    assert len(cut) <= 60 and cut.endswith(" …")
    kept = cut.removesuffix(" …")
    assert text.startswith(kept) and text[len(kept)] in " ,;:("  # whole words kept, none cut in half
