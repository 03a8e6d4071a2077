"""``labelSelector`` and ``fieldSelector`` as the API server reads them.

Label selectors take the whole grammar of kubectl's ``-l``: ``k=v``, ``k==v``,
``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k`` and ``!k``, joined by commas. Field
selectors take ``=``, ``==`` and ``!=`` on the fields the API server supports for each
kind (``metadata.name`` and ``metadata.namespace`` everywhere; ``spec.nodeName``,
``status.phase`` ... on pods; ``involvedObject.*``, ``reason``, ``type`` ... on events);
a missing field compares as ``""``, as it does there (``kubectl describe node`` asks
for ``involvedObject.namespace=``). A field no kind supports is a 400, as there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Test = Callable[[Obj], bool]


class SelectorError(ValueError):
    """A selector that does not parse or names an unsupported field (a 400)."""


_COMMON = ("metadata.name", "metadata.namespace")
FIELDS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
            "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
            "status.nominatedNodeName"),
    "Event": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
              "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
              "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"),
    "Node": ("spec.unschedulable",),
    "Namespace": ("status.phase",),
}
_SET = re.compile(r"^\s*(!?)([^\s!=(),]+)\s*(?:(in|notin)\s*\(([^()]*)\))?\s*$")
_EQUALITY = re.compile(r"^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")


def _terms(text: str) -> list[str]:
    """Split at the commas outside parentheses."""
    terms, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            terms.append(text[start:index])
            start = index + 1
    terms.append(text[start:])
    return [t for t in terms if t.strip()]


def label_selector(text: str) -> Test:
    tests: list[Test] = []
    for term in _terms(text):
        tests.append(_label_term(term))
    return lambda obj: all(test(_labels(obj)) for test in tests)


def _labels(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def _label_term(term: str) -> Test:
    equal = _EQUALITY.match(term)
    if equal:
        key, op, value = equal.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: key in labels and labels[key] == value
    found = _SET.match(term)
    if not found:
        raise SelectorError(f"unable to parse requirement: {term.strip()!r}")
    negate, key, op, values = found.groups()
    if op and negate:
        raise SelectorError(f"unable to parse requirement: {term.strip()!r}")
    if op:
        allowed = {v.strip() for v in values.split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in allowed
        return lambda labels: labels.get(key) not in allowed
    if negate:
        return lambda labels: key not in labels
    return lambda labels: key in labels


def field_selector(text: str, kind: str) -> Test:
    supported = _COMMON + FIELDS.get(kind, ())
    tests: list[Test] = []
    for term in _terms(text):
        found = _EQUALITY.match(term)
        if not found:
            raise SelectorError(f"invalid selector: {term.strip()!r}; expected field=value "
                                "or field!=value")
        field, op, value = found.groups()
        if field not in supported:
            raise SelectorError(f'field label not supported: {field}')
        tests.append(_field_term(field, op == "!=", value))
    return lambda obj: all(test(obj) for test in tests)


def _field_term(field: str, negate: bool, value: str) -> Test:
    def test(obj: Obj) -> bool:
        return (field_value(obj, field) == value) != negate
    return test


def field_value(obj: Obj, field: str) -> str:
    """The string a field selector compares: ``""`` when absent; ``source`` of an event
    is its reporting component."""
    path = ("source", "component") if field == "source" else tuple(field.split("."))
    node: Any = obj
    for step in path:
        node = node.get(step) if isinstance(node, dict) else None
    if isinstance(node, bool):
        return "true" if node else "false"
    return "" if node is None or isinstance(node, dict | list) else str(node)
