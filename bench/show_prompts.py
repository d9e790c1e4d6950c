"""Render the judge prompts of one mini record in every condition, A5 and C2, for both prompt families.

Prints, per prompt, the messages' roles, the instruction word count (everything outside the data blocks;
published A5: about 90 words) and the prompt abridged (each data block cut to 160 characters).

    python bench/show_prompts.py [--record airline-0000] [--difficulty hard] [--family paper]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from agentjudge.judges.prompts import TAG_CALLS, TAG_QUERY, TAG_REFERENCE, TAG_TOOLS, build_messages
from agentjudge.rundir.records import expected_responses, read_records
from agentjudge.runner.work import swap_partners
from agentjudge.types import PROMPT_FAMILIES, JudgeRequest, PromptVariant, Task

DATA = Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl"
_BLOCK = re.compile(r"<(\w+)>\n(.*?)\n</\1>", re.DOTALL)


def instruction_words(text: str) -> int:
    for tag in (TAG_QUERY, TAG_TOOLS, TAG_CALLS, TAG_REFERENCE):
        text = re.sub(rf"<{tag}>\n.*?\n</{tag}>", " ", text, flags=re.DOTALL)
    return len(text.split())


def abridge(text: str) -> str:
    def cut(m: re.Match[str]) -> str:
        body = m.group(2)
        more = f" … [{len(body)} chars]" if len(body) > 160 else ""
        return f"<{m.group(1)}>\n{body[:160]}{more}\n</{m.group(1)}>"

    return _BLOCK.sub(cut, text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", default=None, help="base id (default: the first record)")
    ap.add_argument("--difficulty", default="hard", choices=["easy", "medium", "hard"])
    ap.add_argument("--family", default=None, choices=PROMPT_FAMILIES, help="default: both")
    args = ap.parse_args()
    records = read_records(DATA)
    by_id = {r.id: r for r in records}
    record = by_id[args.record] if args.record else records[0]
    partner = by_id[swap_partners(records)[record.id]]
    task = Task(
        record_id=record.record_id(args.difficulty),
        base_id=record.id,
        difficulty=args.difficulty,
        query=record.queries[args.difficulty],
        system_prompt=record.system_prompt,
        tools=record.tools,
    )
    cases = [
        ("with_gt", record, PromptVariant()),
        ("without_gt", None, PromptVariant()),
        ("swapped_gt", partner, PromptVariant()),
        ("with_gt", record, PromptVariant(prompt_format="freeform")),  # A5
        ("without_gt", None, PromptVariant(prompt_format="freeform")),  # A5
        ("without_gt", None, PromptVariant(default_mode="0.5")),  # C2 (published: without GT only)
    ]
    families = [args.family] if args.family else list(PROMPT_FAMILIES)
    for condition, shown, variant in cases:
        request = JudgeRequest(
            task=task,
            calls=record.expected_calls,  # the GT calls stand in for a generator's output
            gt=shown.gt if shown else None,
            gt_responses=expected_responses(shown) if shown else None,
            condition=condition,  # type: ignore[arg-type]
            variant=variant,
        )
        for family in families:
            messages = build_messages(request, family)  # type: ignore[arg-type]
            text = "\n\n".join(m["content"] for m in messages)
            print(
                f"#### {family} | {condition} | {variant.key} | roles {[m['role'] for m in messages]} | "
                f"instruction words {instruction_words(text)}"
            )
            if family == "paper":
                print(abridge(text), end="\n\n")


if __name__ == "__main__":
    main()
