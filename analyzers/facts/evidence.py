"""Evidence helpers the facts and the rules share: a field of a cluster object, an
event, a list of lines capped with a count of the rest."""

from __future__ import annotations

from analyzers.results.models import Evidence
from bundle.evidence import clip, join_pointer
from bundle.kube import Event, KubeObject

# How many lines of one kind a verdict quotes before "... and N more".
CAP = 4


def field(obj: KubeObject, excerpt: str, *parts: str | int) -> Evidence:
    """Evidence pointing at a field of an object inside its cluster/*.json list."""
    return Evidence(path=obj.source_path, pointer=join_pointer(obj.source_pointer, *parts),
                    excerpt=clip(excerpt))


def event_evidence(event: Event) -> Evidence:
    count = f" (x{event.count})" if event.count and event.count > 1 else ""
    when = f"{event.time} " if event.time else ""
    return field(event, f"{when}{event.reason}: {event.message or ''}{count}", "message")


def capped(items: list[Evidence], cap: int = CAP) -> list[Evidence]:
    """``items``, the ones past ``cap`` folded into one "... and N more" line."""
    if len(items) <= cap:
        return items
    rest = len(items) - cap
    return [*items[:cap], Evidence(path=items[cap].path, excerpt=f"... and {rest} more")]
