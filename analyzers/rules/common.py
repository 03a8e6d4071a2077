"""Small helpers shared by rule families (evidence from objects and files)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from analyzers.models import Evidence, ObjectRef
from bundle.evidence import clip, join_pointer
from bundle.kube import Event, KubeObject, Node, Pod

EVENT_CAP = 3


def ref(obj: Node | Pod | KubeObject, kind: str) -> ObjectRef:
    meta = getattr(obj, "metadata", None)
    name = getattr(meta, "name", "") or ""
    namespace = getattr(meta, "namespace", None)
    return ObjectRef(kind=kind, namespace=namespace, name=name)


def node_ref(name: str) -> ObjectRef:
    return ObjectRef(kind="Node", name=name)


def field(obj: KubeObject, excerpt: str, *parts: str | int) -> Evidence:
    """Evidence pointing at a field of an object inside its cluster/*.json list."""
    return Evidence(path=obj.source_path, pointer=join_pointer(obj.source_pointer, *parts),
                    excerpt=clip(excerpt))


def event_evidence(event: Event) -> Evidence:
    count = f" (x{event.count})" if event.count and event.count > 1 else ""
    when = f"{event.time} " if event.time else ""
    return field(event, f"{when}{event.reason}: {event.message or ''}{count}", "message")


def events_matching(events: Iterable[Event], rule_id: str) -> Iterator[Event]:
    """Events whose message matches a known signature that feeds ``rule_id``."""
    from analyzers import signatures

    for event in events:
        if event.message and any(rule_id in m.signature.rules
                                 for m in signatures.match(event.message, "event")):
            yield event


def names(items: Iterable[str], cap: int = 4) -> str:
    listed = sorted(items)
    shown = ", ".join(listed[:cap])
    return shown + (f" and {len(listed) - cap} more" if len(listed) > cap else "")
